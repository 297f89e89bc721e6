// Grafana's side of hearth's Connect API, played by an outside client: the
// Connect client of @connectrpc/connect-node with code that @bufbuild/protoc-gen-es
// generated from proto/ (tests/integration/api_suite.sh runs protoc), in
// binary (what Grafana's backend sends) and JSON (what its browser app sends).
//
// usage: node connect_test.mjs URL GEN_DIR FROM_MS UNTIL_MS
// The server holds api_suite.sh's Connect fixture. Prints PASS/FAIL lines; exits 1
// on any failure.
import { createClient, ConnectError, Code } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";

const [url, gen, fromArg, untilArg] = process.argv.slice(2);
const { QuerierService } = await import(`${gen}/querier_pb.js`);
const start = BigInt(fromArg), end = BigInt(untilArg);
const CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds";
const MEM = "memory:inuse_space:bytes:space:bytes";
const PERIOD = 10000000; // ns per sample: the fixture's sampleRate=100

let failures = 0;
function check(name, ok, why) {
  if (ok) console.log(`PASS ${name}`);
  else {
    failures++;
    console.log(`FAIL ${name}: ${why}`);
  }
}

// The tree of a FlameGraph's levels: each node's parent is the node of the
// level above whose [x, x + total) holds its x.
function flameTree(fg, scale = 1n) {
  const levels = fg.levels.map((l) => l.values);
  const rows = [];
  for (let d = 0; d < levels.length; d++) {
    let x = 0n;
    const row = [];
    for (let i = 0; i + 3 < levels[d].length; i += 4) {
      const [off, total, self, name] = levels[d].slice(i, i + 4);
      x += off;
      const node = { name: fg.names[Number(name)], self: self / scale, total: total / scale, x, children: [] };
      row.push(node);
      if (d > 0) {
        const parent = rows[d - 1].find((p) => p.x <= x && x < p.x + p.total * scale);
        if (!parent) throw new Error(`level ${d}: no parent for x=${x}`);
        parent.children.push(node);
      }
      x += total;
    }
    rows.push(row);
  }
  return rows[0][0];
}

// A tree with only name, self, total and children (numbers as strings).
function plain(n) {
  return {
    name: n.name,
    self: String(n.self),
    total: String(n.total),
    children: (n.children || []).map(plain),
  };
}

function countNodes(fg) {
  return fg.levels.reduce((s, l) => s + l.values.length / 4, 0);
}

async function apiTree(query, maxNodes) {
  const q = new URLSearchParams({
    query, format: "tree", from: fromArg, until: untilArg,
  });
  if (maxNodes) q.set("maxNodes", String(maxNodes));
  const r = await fetch(`${url}/api/profile?${q}`);
  if (r.status !== 200) throw new Error(`/api/profile: ${r.status} ${await r.text()}`);
  return (await r.json()).tree;
}

async function expectError(name, fn, code, text) {
  try {
    await fn();
    check(name, false, "no error");
  } catch (e) {
    const ce = ConnectError.from(e);
    check(name, ce.code === code && ce.rawMessage.includes(text),
      `got ${Code[ce.code]}: ${ce.rawMessage}`);
  }
}

for (const mode of ["binary", "json"]) {
  const transport = createConnectTransport({
    baseUrl: url, httpVersion: "1.1", useBinaryFormat: mode === "binary",
  });
  const c = createClient(QuerierService, transport);
  const t = (n) => `${n}_${mode}`;

  // ProfileTypes: Grafana's health check and its type picker.
  const pt = await c.profileTypes({ start, end });
  const ids = pt.profileTypes.map((p) => p.ID).sort();
  check(t("profile_types"), JSON.stringify(ids) === JSON.stringify([CPU, MEM].sort()),
    JSON.stringify(ids));
  const cpu = pt.profileTypes.find((p) => p.ID === CPU);
  check(t("profile_type_parts"), cpu && cpu.name === "process_cpu" && cpu.sampleType === "cpu" &&
    cpu.sampleUnit === "nanoseconds" && cpu.periodType === "cpu" && cpu.periodUnit === "nanoseconds",
    JSON.stringify(cpu));

  const names = await c.labelNames({ matchers: [`{service_name="shop"}`], start, end });
  for (const want of ["__profile_type__", "service_name", "env", "__name__"])
    check(t(`label_names_has_${want}`), names.names.includes(want), JSON.stringify(names.names));
  const vals = await c.labelValues({ name: "service_name", start, end });
  check(t("label_values_service_name"), JSON.stringify(vals.names) === '["api","shop"]',
    JSON.stringify(vals.names));
  const envs = await c.labelValues({
    name: "env", matchers: [`{__profile_type__="${CPU}", service_name="shop"}`], start, end,
  });
  check(t("label_values_with_matcher"), JSON.stringify(envs.names) === '["dev","prod"]',
    JSON.stringify(envs.names));

  // The flame graph equals hearth's own tree of the same selection; CPU counts
  // nanoseconds (the type's unit), /api/profile counts samples by default.
  const sel = `{service_name="shop"}`;
  const fg = (await c.selectMergeStacktraces({
    profileTypeID: CPU, labelSelector: sel, start, end, maxNodes: 16384n,
  })).flamegraph;
  const own = await apiTree(`{service_name="shop",__profile_type__="${CPU}"}`);
  const got = plain(flameTree(fg, BigInt(PERIOD)));
  check(t("flamegraph_equals_api_tree"), JSON.stringify(got) === JSON.stringify(plain(own)),
    `${JSON.stringify(got)} vs ${JSON.stringify(plain(own))}`);
  check(t("flamegraph_total_and_max_self"),
    fg.total === BigInt(own.total) * BigInt(PERIOD) && fg.maxSelf === 30n * BigInt(PERIOD) &&
    fg.names[0] === "total", `total ${fg.total} max_self ${fg.maxSelf}`);

  const mem = (await c.selectMergeStacktraces({
    profileTypeID: MEM, labelSelector: "{}", start, end,
  })).flamegraph;
  const memOwn = await apiTree(`{__profile_type__="${MEM}"}`);
  check(t("memory_flamegraph_is_its_own_type"),
    JSON.stringify(plain(flameTree(mem))) === JSON.stringify(plain(memOwn)) && mem.total === 4096n,
    `${JSON.stringify(plain(flameTree(mem)))} vs ${JSON.stringify(plain(memOwn))}`);

  const small = (await c.selectMergeStacktraces({
    profileTypeID: CPU, labelSelector: sel, start, end, maxNodes: 3n,
  })).flamegraph;
  const ownSmall = await apiTree(`{service_name="shop",__profile_type__="${CPU}"}`, 3);
  check(t("max_nodes_honoured"), countNodes(small) <= 3 &&
    JSON.stringify(plain(flameTree(small, BigInt(PERIOD)))) === JSON.stringify(plain(ownSmall)),
    `${countNodes(small)} nodes`);

  // SelectSeries: one series per env, points at step starts (ms) summing to the totals.
  const ss = await c.selectSeries({
    profileTypeID: CPU, labelSelector: sel, start, end, step: 10, groupBy: ["env"],
  });
  const byEnv = Object.fromEntries(ss.series.map((s) => [s.labels.find((l) => l.name === "env")?.value,
    s.points]));
  const sum = (pts) => pts.reduce((a, p) => a + p.value, 0);
  check(t("select_series_groups"), Object.keys(byEnv).sort().join() === "dev,prod" &&
    sum(byEnv.prod) === 60 * PERIOD && sum(byEnv.dev) === 5 * PERIOD,
    JSON.stringify(ss.series.map((s) => [s.labels, s.points.map((p) => [p.value, String(p.timestamp)])])));
  check(t("select_series_timestamps_ms"), ss.series.every((s) => s.points.every((p) =>
    p.timestamp >= start && p.timestamp < end && (p.timestamp - start) % 10000n === 0n)),
    JSON.stringify(ss.series.map((s) => s.points.map((p) => String(p.timestamp)))));

  // SelectSeries with a call site (Pyroscope's StackTraceSelector: stacks whose
  // frames start with the path from the root): one flame graph node's total per step.
  const site = async (names, groupBy = []) => (await c.selectSeries({
    profileTypeID: CPU, labelSelector: sel, start, end, step: 10, groupBy,
    stackTraceSelector: { callSite: names.map((name) => ({ name })) },
  })).series;
  const sums = (series) => series.map((s) => [s.labels.map((l) => `${l.name}=${l.value}`).join(),
    sum(s.points) / PERIOD]).sort();
  let cs = await site(["main", "checkout"]);
  check(t("call_site_series"), JSON.stringify(sums(cs)) === '[["",40]]' &&
    cs[0].points.every((p) => (p.timestamp - start) % 10000n === 0n),
    JSON.stringify(sums(cs)));
  cs = await site(["main", "checkout", "db"]);
  check(t("call_site_leaf"), JSON.stringify(sums(cs)) === '[["",30]]', JSON.stringify(sums(cs)));
  cs = await site(["main", "render"], ["env"]);
  check(t("call_site_grouped"), JSON.stringify(sums(cs)) === '[["env=dev",5],["env=prod",20]]',
    JSON.stringify(sums(cs)));
  cs = await site(["checkout"]);
  check(t("call_site_is_a_prefix_from_the_root"), cs.length === 0, JSON.stringify(sums(cs)));
  await expectError(t("call_site_too_deep_is_invalid_argument"),
    () => site(Array.from({ length: 300 }, () => "main")), Code.InvalidArgument, "call site");

  const series = await c.series({ matchers: [`{service_name="api"}`], start, end });
  const ls = series.labelsSet.map((l) => Object.fromEntries(l.labels.map((p) => [p.name, p.value])));
  check(t("series_labels"), ls.length === 1 && ls[0].service_name === "api" &&
    ls[0].__profile_type__ === CPU && ls[0].__name__ === "api", JSON.stringify(ls));

  const prof = await c.selectMergeProfile({ profileTypeID: CPU, labelSelector: sel, start, end });
  check(t("select_merge_profile_is_pprof"), prof.sample.length > 0 &&
    prof.stringTable.includes("checkout") && prof.stringTable.includes("db"),
    `${prof.sample.length} samples`);

  const st = await c.getProfileStats({});
  check(t("profile_stats"), st.dataIngested && st.oldestProfileTime > 0n &&
    st.oldestProfileTime <= st.newestProfileTime && st.newestProfileTime <= end,
    JSON.stringify({ o: String(st.oldestProfileTime), n: String(st.newestProfileTime) }));

  await expectError(t("bad_profile_type_is_invalid_argument"),
    () => c.selectMergeStacktraces({ profileTypeID: "cpu", labelSelector: sel, start, end }),
    Code.InvalidArgument, "profile_typeID 'cpu'");
  await expectError(t("bad_selector_is_invalid_argument"),
    () => c.selectSeries({ profileTypeID: CPU, labelSelector: '{service_name="x"', start, end, step: 10 }),
    Code.InvalidArgument, "");
  await expectError(t("start_after_end_is_invalid_argument"),
    () => c.labelNames({ start: end, end: start }), Code.InvalidArgument, "start is after end");
}
process.exit(failures ? 1 : 0);
