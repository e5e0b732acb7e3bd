<?php
// Seed 002's "real" page: a database query, a file-cache read and a template render.
$db = require __DIR__ . '/_loadlab/db.php';
$link = new mysqli($db['host'], $db['user'], $db['password'], $db['name'], $db['port']);
$result = $link->query(
    "SELECT Code, Name, Region, Population FROM Country WHERE Continent = 'Europe' "
    . 'ORDER BY Population DESC LIMIT 20'
);
$rows = '';
$count = 0;
while ($row = $result->fetch_assoc()) {
    $rows .= strtr(
        '<tr><td>%code%</td><td>%name%</td><td>%region%</td><td>%population%</td></tr>' . "\n",
        [
            '%code%' => htmlspecialchars($row['Code']),
            '%name%' => htmlspecialchars($row['Name']),
            '%region%' => htmlspecialchars($row['Region']),
            '%population%' => number_format((int) $row['Population']),
        ]
    );
    $count++;
}
$link->close();

$menu = json_decode(file_get_contents(__DIR__ . '/cache/menu.json'), true);
$items = '';
foreach ($menu['items'] as $item) {
    $items .= '<li><a href="' . htmlspecialchars($item['href']) . '">'
        . htmlspecialchars($item['title']) . "</a></li>\n";
}

$template = file_get_contents(__DIR__ . '/templates/complex.tpl');
echo strtr($template, [
    '%title%' => 'The twenty largest countries of Europe',
    '%menu%' => $items,
    '%rows%' => $rows,
    '%marker%' => 'loadlab:complex rows=' . $count . ' menu=' . count($menu['items']),
]);
