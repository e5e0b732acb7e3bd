//! `--http3`'s usage refusals, before any datagram: with `--http2` beside it, toward an
//! `http://` URL (QUIC carries TLS 1.3 only), or with page views or visits (not carried yet). Its runs against a real server are the lab's
//! (`lab::caddy`), its refusal of a server without h3 too (`lab::tls`, nginx).

use super::assert_exit;

#[test]
fn http3_with_http2_or_toward_plain_http_is_a_usage_error_in_one_line() {
    let cases: [(&[&str], &str); 5] = [
        (
            &["--http3", "--http2", "https://127.0.0.1:9/"],
            "'--http3' cannot be used with '--http2'",
        ),
        (&["--http3", "http://127.0.0.1:9/"], "--http3 needs an https:// URL"),
        (&["--http3", "--tls-version", "1.2", "https://127.0.0.1:9/"], "TLS 1.3 only"),
        // Page views and visits are not carried over HTTP/3: said before a view's discovery
        // reaches for the server (which answered "cannot reach", exit 3, here).
        (&["--http3", "--view", "https://127.0.0.1:9/"], "'--http3' cannot be used with '--view'"),
        (&["--http3", "--visits", "v.toml", "https://127.0.0.1:9/"], "cannot be used with"),
    ];
    for (args, said) in cases {
        let mut cmd = crate::support::loadlab();
        cmd.args(["bench", "-n", "1"]).args(args);
        let out = crate::support::output_within(cmd, crate::support::RUN_LIMIT);
        assert_exit(&out, 2);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(said), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    }
}
