//! The report's reading of profiles, on made-up folded stacks: shares, merging over
//! repetitions, why a stack has none, and the differences in words.

use loadlab_store::{ProfileRecord, RunProfiles};

use super::difference::{deltas, words};
use super::*;
use crate::group::groups;
use crate::testcell::{cell, profiled, FASTCGI_NGINX, FASTCGI_PHP, MODPHP};

#[test]
fn functions_count_self_at_the_leaf_and_total_once_per_stack() {
    let folded = "php-fpm;main;execute_ex;zend_compile_file 6\n\
                  php-fpm;main;execute_ex;execute_ex;strlen 3\n\
                  php-fpm;main 1\n";
    let f = functions(folded);
    let get = |name: &str| f.iter().find(|s| s.function == name).unwrap().clone();
    assert_eq!(f[0].function, "zend_compile_file");
    assert_eq!(
        (get("zend_compile_file").self_samples, get("zend_compile_file").total_samples),
        (6, 6)
    );
    assert_eq!((get("execute_ex").self_samples, get("execute_ex").total_samples), (0, 9));
    assert_eq!((get("main").self_samples, get("main").total_samples), (1, 10));
    assert!(f.iter().all(|s| s.function != "php-fpm"), "the root is the process");
}

#[test]
fn the_largest_differences_are_said_in_words_with_each_stacks_share() {
    let fastcgi = merged([FASTCGI_PHP, FASTCGI_NGINX]);
    let d = deltas(MODPHP, &fastcgi);
    // Of 1,000 samples each: unix_stream_sendmsg 10% against 35%, execute_ex 60% against 40%,
    // [libphp8.2.so] 20% against 5%, nginx's handler 0% against 10%, the copy 10% and 10%.
    let said = words("apache-modphp", "nginx-fastcgi", &d);
    assert_eq!(
        said,
        [
            "nginx-fastcgi spends 35.0% of its samples in unix_stream_sendmsg, apache-modphp 10.0%",
            "apache-modphp spends 60.0% of its samples in execute_ex, nginx-fastcgi 40.0%",
            "nginx-fastcgi spends 10.0% of its samples in ngx_http_fastcgi_handler, apache-modphp \
             0.0%",
            "apache-modphp spends 20.0% of its samples in code perf found no symbol for \
             ([libphp8.2.so] 20.0%), nginx-fastcgi 5.0% ([libphp8.2.so] 5.0%)",
        ]
    );
    let copy = d.iter().find(|f| f.function == "copy_user_enhanced_fast_string").unwrap();
    assert_eq!((copy.base_pct, copy.other_pct, copy.difference_pct), (10.0, 10.0, 0.0));
    assert_eq!(d.last().unwrap().function, "copy_user_enhanced_fast_string", "no difference last");
}

#[test]
fn a_groups_stacks_merge_their_repetitions_and_say_why_one_has_none() {
    let cells = vec![
        profiled(cell("apache-modphp", "phpinfo.php", 10, 0, 100.0), "perf"),
        profiled(cell("apache-modphp", "phpinfo.php", 10, 1, 100.0), "perf"),
        profiled(cell("nginx-fastcgi", "phpinfo.php", 10, 0, 200.0), "perf"),
        profiled(cell("varnish", "phpinfo.php", 10, 0, 300.0), "refused: No permission"),
        cell("nginx", "phpinfo.php", 10, 0, 400.0),
    ];
    let mut profiles = RunProfiles::new();
    profiles.insert(cells[0].ordinal, vec![ProfileRecord::for_test("apache2", MODPHP)]);
    profiles.insert(cells[1].ordinal, vec![ProfileRecord::for_test("apache2", MODPHP)]);
    profiles.insert(
        cells[2].ordinal,
        vec![
            ProfileRecord::for_test("nginx", FASTCGI_NGINX),
            ProfileRecord::for_test("php-cgi", FASTCGI_PHP),
        ],
    );
    let g = of_group(&groups(&cells)[0], &profiles).expect("a profiled group");
    let names: Vec<&str> = g.stacks.iter().map(|s| s.stack.as_str()).collect();
    assert_eq!(names, ["apache-modphp", "nginx-fastcgi", "varnish"], "nginx was not asked");
    let apache = &g.stacks[0];
    assert_eq!(apache.cells, [cells[0].ordinal + 1, cells[1].ordinal + 1]);
    assert_eq!((apache.tiers[0].samples, apache.tiers[0].enough), (2_000, true));
    assert!(apache.tiers[0].folded.contains("apache2;[libphp8.2.so];execute_ex 1200\n"));
    assert_eq!(g.stacks[2].profile, "refused: No permission");
    assert!(g.stacks[2].tiers.is_empty());

    assert_eq!(g.differences.len(), 2, "the first stack against each other");
    let fastcgi = &g.differences[0];
    assert!(fastcgi.enough);
    assert_eq!((fastcgi.base_samples, fastcgi.other_samples), (2_000, 1_000));
    assert_eq!(fastcgi.functions[0].function, "unix_stream_sendmsg");
    assert_eq!(fastcgi.words.len(), 4, "three differences and the code without symbols");
    let varnish = &g.differences[1];
    assert!(!varnish.enough && varnish.functions.is_empty());
    assert_eq!(
        varnish.words,
        ["apache-modphp and varnish are not compared: varnish has no profile (refused: No \
          permission), under the 500 a profile needs to say anything."]
    );
}

#[test]
fn a_group_without_a_profiled_cell_has_no_profiles() {
    let cells = vec![cell("nginx", "hello.txt", 1, 0, 1.0), cell("apache", "hello.txt", 1, 0, 1.0)];
    assert!(of_group(&groups(&cells)[0], &RunProfiles::new()).is_none());
}

/// `report --format json`: a profiled group's verdict carries its stacks' tiers and the
/// differences, a group without profiled cells has no `profiles` key.
#[test]
fn the_verdicts_json_carries_each_profiled_groups_profiles() {
    let (mut cells, profiles) = crate::testcell::profiled_group();
    cells.push(cell("nginx", "hello.txt", 1, 0, 1_000.0));
    let json = serde_json::to_value(crate::verdict::profiled_verdicts(&cells, &profiles)).unwrap();
    let p = &json[0]["profiles"];
    assert_eq!(p["stacks"][0]["stack"], "apache-modphp", "{p:#}");
    assert_eq!(p["stacks"][0]["profile"], "perf");
    let tier = &p["stacks"][1]["tiers"][0];
    assert_eq!(tier["tier"], "nginx", "{p:#}");
    assert_eq!((tier["samples"].as_u64(), tier["enough"].as_bool()), (Some(300), Some(false)));
    assert!(tier.get("folded").is_none(), "folded stacks are `loadlab profile --folded`'s");
    let d = &p["differences"][0];
    assert_eq!(
        (d["base"].as_str(), d["other"].as_str()),
        (Some("apache-modphp"), Some("nginx-fastcgi"))
    );
    let f = &d["functions"][0];
    assert_eq!(f["function"], "unix_stream_sendmsg", "{d:#}");
    assert_eq!((f["base_pct"].as_f64(), f["other_pct"].as_f64()), (Some(10.0), Some(35.0)));
    assert_eq!(f["difference_pct"], 25.0);
    assert_eq!(d["words"].as_array().unwrap().len(), 4, "{d:#}");
    assert!(json[1].get("profiles").is_none(), "{:#}", json[1]);
}
