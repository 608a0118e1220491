// $BROWSER for the conformance tests (client.sh): opens the login page given as its argument the
// way a browser whose user is logged in already does, following its redirects back to oppxd.
const url = process.argv[2];
fetch(url, { redirect: 'follow' })
  .then((r) => r.text())
  .then(() => process.exit(0))
  .catch((e) => {
    console.error(`browser.js: ${e.message}`);
    process.exit(1);
  });
