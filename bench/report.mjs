// Renders the rows the benchmarks append (bench_support.h, ReportRow) as one Markdown table.
//   node bench/report.mjs rows.jsonl "machine line"
import fs from "node:fs";
const [file, machine] = process.argv.slice(2);
const rows = fs.readFileSync(file, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
const num = (x) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x >= 1 ? x.toFixed(2) : x.toFixed(3));
const spread = (r) => (r.min > 0 && r.p90 > 0 ? `${num(r.min)} … ${num(r.p90)}` : "–");
const out = [];
out.push(`Measured ${machine}. Median, spread (min … p90), and the ratio of the median to the anchor's`);
out.push("median measured in the same run (under 1: faster or smaller than the anchor).");
out.push("");
out.push("| benchmark | measure | median | spread | anchor | anchor median | ratio | note |");
out.push("|---|---|---:|---:|---|---:|---:|---|");
for (const r of rows) {
  const unit = ` ${r.unit}`;
  const anchor = r.anchor ? r.anchor : "–";
  const am = r.anchor ? num(r.anchor_median) + unit : "–";
  const ratio = r.ratio !== undefined ? r.ratio.toFixed(2) : "–";
  const failures = r.failures ? ` (${r.failures} failed)` : "";
  out.push(
    `| ${r.bench} | ${r.what}${failures} | ${num(r.median)}${unit} | ${spread(r)} | ${anchor} | ${am} | ${ratio} | ${r.note || ""} |`,
  );
}
console.log(out.join("\n"));
