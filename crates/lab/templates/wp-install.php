<?php
// Run once by loadlab with php-cli while it builds the MariaDB template: installs WordPress
// with a fixed title, an administrator `loadlab` and five posts with known slugs, so that
// every instance serves the same blog. The template's password is random and never told:
// each instance sets a password of its own when its database starts (see wordpress.rs).
$_SERVER['HTTP_HOST'] = '127.0.0.1';
$_SERVER['REQUEST_URI'] = '/';
define('WP_INSTALLING', true);

// Pluggable: WordPress defines it only if it is not defined yet. There is no mail to send.
function wp_new_blog_notification() {}

require __DIR__ . '/wp-load.php';
require_once ABSPATH . 'wp-admin/includes/upgrade.php';

// The installer probes the site over HTTP (for pretty permalinks); nothing here may make a
// request.
add_filter('pre_http_request', function () {
    return new WP_Error('loadlab', 'no HTTP while installing');
});

$result = wp_install('loadlab', 'loadlab', 'loadlab@example.invalid', true, '', wp_generate_password(32));
if (is_wp_error($result)) {
    fwrite(STDERR, $result->get_error_message() . "\n");
    exit(1);
}
// One bird per post: a word that only its post holds, for the built-in search visit.
$birds = ['heron', 'kestrel', 'osprey', 'plover', 'wren'];
for ($i = 1; $i <= 5; $i++) {
    $bird = $birds[$i - 1];
    $id = wp_insert_post([
        'post_title' => "loadlab post $i",
        'post_name' => "loadlab-post-$i",
        'post_content' => str_repeat("<p>This is post $i of the loadlab benchmark blog. It has a few sentences, like a short blog post would.</p>\n", 4)
            . "<p>Bird of the day: $bird.</p>\n",
        'post_status' => 'publish',
        'post_date' => sprintf('2009-01-%02d 12:00:00', $i),
        'post_author' => 1,
    ], true);
    if (is_wp_error($id)) {
        fwrite(STDERR, $id->get_error_message() . "\n");
        exit(1);
    }
}
echo "installed\n";
