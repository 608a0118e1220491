// A page for the browser tests: a button that counts its clicks on the page and an error in the
// console at load. Listens on 127.0.0.1 with a port of the system's choosing and prints it.
const http = require('http');
const page = `<!doctype html><html><head><title>Counter</title></head><body>
<h1>Counter</h1><button id="add">Add</button><p id="count">clicks: 0</p>
<script>
let n = 0;
document.getElementById('add').addEventListener('click', () => {
  n++;
  document.getElementById('count').textContent = 'clicks: ' + n;
});
console.error('widget failed to load: missing /api/config');
</script></body></html>`;
const server = http.createServer((req, res) => {
  res.writeHead(200, {'content-type': 'text/html'});
  res.end(page);
});
server.listen(0, '127.0.0.1', () => console.log(`port ${server.address().port}`));
