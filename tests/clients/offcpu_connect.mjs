// Grafana's view of off-CPU and wall-clock profiles (issue 28), played by the
// Connect client of @connectrpc/connect-node with code generated from proto/
// (tests/integration/test_offcpu_view.sh runs protoc): ProfileTypes lists both
// types with their parts, SelectMergeStacktraces and SelectSeries answer them in
// nanoseconds, by reason, never mixed with CPU.
//
// usage: node offcpu_connect.mjs URL GEN_DIR FROM_MS UNTIL_MS OFF_TOTAL_NS
//        SLEEP_NS WALL_TOTAL_NS CPU_TOTAL_NS
// Prints PASS/FAIL lines; exits 1 on any failure.
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";

const [url, gen, fromArg, untilArg, offTotal, sleepNs, wallTotal, cpuTotal] = process.argv.slice(2);
const { QuerierService } = await import(`${gen}/querier_pb.js`);
const start = BigInt(fromArg), end = BigInt(untilArg);
const CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds";
const OFF = "off_cpu:off_cpu:nanoseconds:off_cpu:nanoseconds";
const WALL = "wall:wall:nanoseconds:wall:nanoseconds";

let failures = 0;
function check(name, ok, why) {
  if (ok) console.log(`PASS ${name}`);
  else {
    failures++;
    console.log(`FAIL ${name}: ${why}`);
  }
}

for (const mode of ["binary", "json"]) {
  const c = createClient(QuerierService, createConnectTransport({
    baseUrl: url, httpVersion: "1.1", useBinaryFormat: mode === "binary",
  }));
  const t = (n) => `connect_${n}_${mode}`;

  const pt = await c.profileTypes({ start, end });
  const ids = pt.profileTypes.map((p) => p.ID).sort();
  check(t("profile_types"), JSON.stringify(ids) === JSON.stringify([CPU, OFF, WALL].sort()), JSON.stringify(ids));
  for (const [id, name] of [[OFF, "off_cpu"], [WALL, "wall"]]) {
    const p = pt.profileTypes.find((x) => x.ID === id);
    check(t(`${name}_type_parts`), p && p.name === name && p.sampleType === name && p.sampleUnit === "nanoseconds" &&
      p.periodType === name && p.periodUnit === "nanoseconds", JSON.stringify(p));
  }

  const fg = async (type, sel) => (await c.selectMergeStacktraces({
    profileTypeID: type, labelSelector: sel, start, end, maxNodes: 1024n,
  })).flamegraph;
  const off = await fg(OFF, "{}");
  check(t("off_cpu_total_ns"), off.total === BigInt(offTotal) && off.names.includes("[off-cpu: io]") &&
    !off.names.includes("parse"), `total ${off.total}, names ${off.names}`);
  const noSleep = await fg(OFF, '{reason!="sleep"}');
  check(t("off_cpu_reason_filter"), noSleep.total === BigInt(offTotal) - BigInt(sleepNs) &&
    !noSleep.names.includes("[off-cpu: sleep]"), `total ${noSleep.total}, names ${noSleep.names}`);
  const wall = await fg(WALL, "{}");
  check(t("wall_total_ns"), wall.total === BigInt(wallTotal) && wall.names.includes("[on-cpu]"),
    `total ${wall.total}, names ${wall.names}`);
  const cpu = await fg(CPU, "{}");
  check(t("cpu_not_mixed"), cpu.total === BigInt(cpuTotal) && !cpu.names.some((n) => n.startsWith("[off-cpu")),
    `total ${cpu.total}, names ${cpu.names}`);

  const ss = await c.selectSeries({
    profileTypeID: OFF, labelSelector: "{}", start, end, step: 3600, groupBy: ["reason"],
  });
  const byReason = Object.fromEntries(ss.series.map((s) => [
    s.labels.find((l) => l.name === "reason")?.value,
    s.points.reduce((a, p) => a + p.value, 0),
  ]));
  const sum = Object.values(byReason).reduce((a, v) => a + v, 0);
  check(t("series_by_reason"), Object.keys(byReason).length === 4 && byReason.sleep === Number(sleepNs) &&
    sum === Number(offTotal), JSON.stringify(byReason));
}
process.exit(failures ? 1 : 0);
