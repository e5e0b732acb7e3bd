//! The `Country` table of seed 001's dynamic page: MySQL's world sample schema, 240 rows x
//! 15 columns, with values generated deterministically (the same on every machine), about
//! as long as the world sample's. country.php renders them as a text table of about 30 KB,
//! as seed 001 quotes (as an HTML table, whose `<tr><td>` markup alone is 15 KB, it was 35 KB).

use std::fmt::Write;

pub const ROWS: usize = 240;

const SCHEMA: &str = "CREATE TABLE Country (
  Code CHAR(3) NOT NULL DEFAULT '',
  Name CHAR(52) NOT NULL DEFAULT '',
  Continent ENUM('Asia','Europe','North America','Africa','Oceania','Antarctica','South America')
    NOT NULL DEFAULT 'Asia',
  Region CHAR(26) NOT NULL DEFAULT '',
  SurfaceArea DECIMAL(10,2) NOT NULL DEFAULT '0.00',
  IndepYear SMALLINT DEFAULT NULL,
  Population INT NOT NULL DEFAULT '0',
  LifeExpectancy DECIMAL(3,1) DEFAULT NULL,
  GNP DECIMAL(10,2) DEFAULT NULL,
  GNPOld DECIMAL(10,2) DEFAULT NULL,
  LocalName CHAR(45) NOT NULL DEFAULT '',
  GovernmentForm CHAR(45) NOT NULL DEFAULT '',
  HeadOfState CHAR(60) DEFAULT NULL,
  Capital INT DEFAULT NULL,
  Code2 CHAR(2) NOT NULL DEFAULT '',
  PRIMARY KEY (Code)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
";

const CONTINENTS: [&str; 7] =
    ["Asia", "Europe", "North America", "Africa", "Oceania", "Antarctica", "South America"];
const REGIONS: [&str; 8] =
    ["Caribbean", "Middle East", "Polynesia", "Melanesia", "Baltic", "Nordic", "Andes", "Sahel"];
const FORMS: [&str; 5] = ["Republic", "Monarchy", "Federation", "Territory", "Emirate"];
const SYLLABLES: [&str; 16] = [
    "ka", "lo", "ri", "an", "mu", "ta", "se", "vo", "ne", "ul", "bi", "dra", "po", "en", "zi", "go",
];

/// A 64-bit linear congruential generator (Knuth's MMIX constants): tiny, and the same
/// sequence everywhere.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 =
            self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % below
    }

    fn word(&mut self, syllables: u64) -> String {
        let mut word: String = (0..syllables).map(|_| SYLLABLES[self.next(16) as usize]).collect();
        word[..1].make_ascii_uppercase();
        word
    }
}

/// One row, as SQL literals in column order.
fn row(i: usize, rng: &mut Lcg) -> [String; 15] {
    let letter = |n: usize| char::from(b'A' + (n % 26) as u8);
    let code = format!("{}{}{}", letter(i / 26 / 26 + 1), letter(i / 26), letter(i));
    let code2 = format!("{}{}", letter(i / 26 + 3), letter(i + 7));
    let name = rng.word(2);
    let sql = |s: &str| format!("'{s}'");
    // NULLs about as often as in the world sample: some independence years, half the old
    // GNPs, a third of the heads of state.
    let or_null = |rng: &mut Lcg, one_in: u64, value: String| {
        if rng.next(one_in) == 0 {
            "NULL".into()
        } else {
            value
        }
    };
    let year = 1800 + rng.next(200);
    let indep = or_null(rng, 4, year.to_string());
    let gnp = rng.next(90_000);
    let gnp_old = or_null(rng, 2, format!("{}.00", gnp * 9 / 10));
    let head = format!("{}. {}", letter(rng.next(26) as usize), rng.word(2));
    let head = or_null(rng, 3, sql(&head));
    [
        sql(&code),
        sql(&name),
        sql(CONTINENTS[rng.next(7) as usize]),
        sql(REGIONS[rng.next(8) as usize]),
        format!("{}.00", 1000 + rng.next(200_000)),
        indep,
        (10_000 + rng.next(9_000_000)).to_string(),
        format!("{}.{}", 45 + rng.next(40), rng.next(10)),
        format!("{gnp}.00"),
        gnp_old,
        sql(&name.to_lowercase()),
        sql(FORMS[rng.next(5) as usize]),
        head,
        (1 + rng.next(4000)).to_string(),
        sql(&code2),
    ]
}

fn rows() -> Vec<[String; 15]> {
    let mut rng = Lcg(2009);
    (0..ROWS).map(|i| row(i, &mut rng)).collect()
}

/// The SQL that creates and fills `loadlab.Country`.
pub fn sql() -> String {
    let mut out = format!("USE loadlab;\n{SCHEMA}INSERT INTO Country VALUES\n");
    let rows = rows();
    for (i, row) in rows.iter().enumerate() {
        let sep = if i + 1 == rows.len() { ";" } else { "," };
        let _ = writeln!(out, "({}){sep}", row.join(","));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes country.php renders per row: the values, 14 ` | ` between them, and `\n`.
    fn rendered_size() -> usize {
        rows()
            .iter()
            .map(|row| {
                let values: usize = row
                    .iter()
                    .map(|v| if v == "NULL" { 0 } else { v.trim_matches('\'').len() })
                    .sum();
                values + 14 * 3 + 1
            })
            .sum()
    }

    #[test]
    fn the_table_is_deterministic_and_renders_about_30k() {
        assert_eq!(sql(), sql());
        let codes: std::collections::HashSet<String> =
            rows().iter().map(|r| r[0].clone()).collect();
        assert_eq!(codes.len(), ROWS, "codes are unique");
        let size = rendered_size();
        assert!((28_500..31_000).contains(&size), "{size} bytes");
    }
}
