<!DOCTYPE html>
<html>
<head><title>%title%</title></head>
<body>
<nav><ul>
%menu%</ul></nav>
<h1>%title%</h1>
<table>
<tr><th>Code</th><th>Name</th><th>Region</th><th>Population</th></tr>
%rows%</table>
<!-- %marker% -->
</body>
</html>
