<?php
// loadlab's own probe, not a workload: which PHP answered (SAPI, version, extensions) and
// whether OPcache is on, so verify can prove the intended tier ran the page.
header('Content-Type: application/json');
header('Cache-Control: no-store');
$opcache = function_exists('opcache_get_status') ? opcache_get_status(false) : false;
echo json_encode([
    'sapi' => PHP_SAPI,
    'version' => PHP_VERSION,
    'extensions' => get_loaded_extensions(),
    'opcache_enabled' => is_array($opcache) && !empty($opcache['opcache_enabled']),
    'ini' => [
        'memory_limit' => ini_get('memory_limit'),
        'opcache.enable' => ini_get('opcache.enable'),
        'opcache.memory_consumption' => ini_get('opcache.memory_consumption'),
        'opcache.validate_timestamps' => ini_get('opcache.validate_timestamps'),
        'realpath_cache_size' => ini_get('realpath_cache_size'),
    ],
]);
