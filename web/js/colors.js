// Frame colours: one hue per module/package so a reader can tell code apart at a
// glance, fixed hues for the kernel and for Python frames (module "[python]"), and
// a red/blue scale for diffs. Colours are a
// small fixed palette (indexes) so the flame graph can batch fillRect by colour.

/** "foo_[i]" -> true: an inlined frame (hearth marks them with this suffix). */
export const isInlined = (name) => name.endsWith('_[i]');
/** "foo_[k]" -> true: a kernel frame. */
export const isKernel = (name) => name.endsWith('_[k]');

/** Strips hearth's _[i]/_[k] marker for display. */
export function bareName(name) {
  return name.endsWith('_[i]') || name.endsWith('_[k]') ? name.slice(0, -4) : name;
}

/**
 * The package a frame belongs to, derived from its name when the server gave no
 * module: Go "pkg/path.Func" -> "pkg/path", C++/Rust "ns::x" -> "ns",
 * "lib.so`sym" -> "lib.so", kernel -> "kernel", else the first token.
 */
export function packageOf(name, module) {
  if (module) return module.slice(module.lastIndexOf('/') + 1);
  if (isKernel(name)) return '[kernel]';
  const n = bareName(name);
  const tick = n.indexOf('`');
  if (tick > 0) return n.slice(0, tick);
  const colons = n.indexOf('::');
  if (colons > 0) return n.slice(0, colons).replace(/^.*[\s<(*&]/, '');
  const slash = n.lastIndexOf('/');
  const dot = n.indexOf('.', slash + 1);
  if (dot > 0 && !/[\s(]/.test(n.slice(0, dot))) return n.slice(0, dot);
  const m = /^[^\s(<.:]+/.exec(n);
  return m ? m[0] : n;
}

function hash(s) {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 16777619);
  }
  return h >>> 0;
}

// Palette for packages: 18 hues x 3 lightness steps. Index 0 is the kernel colour,
// index 1 the dimmed colour (frames that do not match a search), 2 the root's.
const HUES = 18;
const SHADES = 3;
export const PAL_KERNEL = 0;
export const PAL_DIM = 1;
export const PAL_ROOT = 2; // "all": a neutral slate
export const PAL_PYTHON = 3; // 3 shades of one yellow: interpreted Python code
const PAL_BASE = 6;
export const palette = ['hsl(24, 85%, 66%)', 'hsl(220, 12%, 88%)', 'hsl(215, 20%, 80%)',
  'hsl(52, 80%, 62%)', 'hsl(52, 74%, 70%)', 'hsl(52, 68%, 78%)'];
for (let h = 0; h < HUES; h++) {
  for (let s = 0; s < SHADES; s++) {
    // Skip the kernel's orange band so user code never looks like kernel code.
    const hue = (200 + h * (360 / HUES)) % 360;
    palette.push(`hsl(${hue.toFixed(0)}, ${44 + s * 6}%, ${76 - s * 6}%)`);
  }
}

// The root level a group-by adds (process=python3, pid=4242): three slate-blue
// shades, apart from every package hue, so a group never reads as code.
export const PAL_GROUP = palette.length;
palette.push('hsl(226, 30%, 72%)', 'hsl(226, 26%, 78%)', 'hsl(226, 34%, 66%)');
/** Palette index of a group node ("process=python3"): one of the group shades by its value. */
export const groupColor = (name) => PAL_GROUP + (hash(name) % 3);

// The leaf pseudo-frames of off-CPU and wall-clock profiles (docs/offcpu.md):
// one fixed colour per reason, so waiting reads apart from code and a reason
// keeps its colour in every graph. "[on-cpu]" (wall's running time) is green.
export const WAIT_REASONS = ['runqueue', 'io', 'lock', 'sleep', 'throttled', 'other'];
export const PAL_WAIT = palette.length;
palette.push('hsl(0, 62%, 68%)', 'hsl(190, 55%, 62%)', 'hsl(280, 42%, 70%)', 'hsl(220, 8%, 76%)',
  'hsl(32, 50%, 58%)', 'hsl(220, 8%, 66%)', 'hsl(130, 45%, 62%)');
/** "[off-cpu: io]" -> "io", "[on-cpu]" -> "running", any other name -> null. */
export function waitReason(name) {
  if (name === '[on-cpu]') return 'running';
  const m = /^\[off-cpu: ([^\]]*)\]$/.exec(name);
  return m ? m[1] : null;
}

/** Palette index of a frame: hue from its package, shade from its own name. */
export function colorIndex(name, module) {
  const reason = name.charCodeAt(0) === 91 /* '[' */ ? waitReason(name) : null;
  if (reason) {
    const k = reason === 'running' ? WAIT_REASONS.length : WAIT_REASONS.indexOf(reason);
    return PAL_WAIT + (k < 0 ? WAIT_REASONS.indexOf('other') : k);
  }
  const pkg = packageOf(name, module);
  if (pkg === '[kernel]') return PAL_KERNEL;
  if (pkg === '[python]') return PAL_PYTHON + (hash(name) % 3);
  return PAL_BASE + (hash(pkg) % HUES) * SHADES + (hash(name) % SHADES);
}

// Diff palette: 2*DIFF_STEPS+1 entries, blue (less) .. neutral .. red (more).
export const DIFF_STEPS = 8;
export const diffPalette = [];
for (let i = -DIFF_STEPS; i <= DIFF_STEPS; i++) {
  const t = Math.abs(i) / DIFF_STEPS;
  if (i === 0) diffPalette.push('hsl(220, 10%, 88%)');
  else if (i < 0) diffPalette.push(`hsl(214, ${40 + 40 * t}%, ${86 - 30 * t}%)`);
  else diffPalette.push(`hsl(4, ${45 + 40 * t}%, ${86 - 30 * t}%)`);
}

/**
 * Diff palette index for a change in percentage points of the total: the scale
 * saturates at ±maxPP (the largest change in the tree, at least 1 pp).
 */
export function diffIndex(pp, maxPP) {
  const t = Math.max(-1, Math.min(1, pp / maxPP));
  return DIFF_STEPS + Math.round(t * DIFF_STEPS);
}
