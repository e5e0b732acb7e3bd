<?php
// Seed 001's dynamic page: the whole Country table (240 rows x 15 columns) as an HTML table.
$db = require __DIR__ . '/_loadlab/db.php';
$link = new mysqli($db['host'], $db['user'], $db['password'], $db['name'], $db['port']);
$result = $link->query('SELECT * FROM Country ORDER BY Code');
$rows = 0;
$out = '';
while ($row = $result->fetch_row()) {
    $out .= '<tr><td>' . implode('<td>', array_map('htmlspecialchars', $row)) . "\n";
    $rows++;
}
$link->close();
?>
<!DOCTYPE html>
<html><head><title>Countries</title></head><body>
<table>
<tr><th>Code<th>Name<th>Continent<th>Region<th>SurfaceArea<th>IndepYear<th>Population<th>LifeExpectancy<th>GNP<th>GNPOld<th>LocalName<th>GovernmentForm<th>HeadOfState<th>Capital<th>Code2
<?= $out ?></table>
<!-- loadlab:country rows=<?= $rows ?> -->
</body></html>
