// onnxruntime.js — the onnxruntime backend: runs an ONNX model with ONNX
// Runtime's CPU library (npm package onnxruntime-node, installed by
// tools/deps.sh from the committed package-lock.json) on parity tensor sets.
// It follows the backend contract of docs/backends.md; pipeline/backends/
// onnxruntime is the executable that starts it.
//
//   onnxruntime run --model MODEL.onnx --input IN --output OUT
//                   [--threads N] [--runs N] [--stats FILE] [--profile FILE]
//                   [--input-shape NAME=DIMS]... [--precision fp32]
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const npy = require('./lib/npy.js');
const { BadInput } = npy;

const USAGE = `usage: onnxruntime run --model MODEL.onnx --input IN --output OUT [options]
  --model MODEL.onnx       the ONNX model (an engine file is not accepted)
  --input IN               a tensor set (folder of NAME.npy), or a folder of them, one per sample
  --output OUT             output tensor set(s), mirroring IN; appears only when complete
  --threads N              intra-op threads (default 1); inter-op threads are 1
  --runs N                 run each sample N times; latency is their median (default 1)
  --stats FILE             latency statistics (JSON, the keys parity's infer writes)
  --profile FILE           ONNX Runtime's own per-node trace (Chrome trace JSON); with more than
                           one run in all, the process's first run (the warm-up) is left out
  --input-shape NAME=DIMS  checked against the input tensors (ONNX Runtime takes shapes from them)
  --precision fp32         the only precision this backend runs (the model's own types)
  --optimization LEVEL     ONNX Runtime graph optimisation: disabled, basic, extended or all
                           (default: ONNX Runtime's own default, all)
  -h, --help | -V, --version
Exit: 0 done, 2 bad usage or bad input, 3 internal error (e.g. onnxruntime-node missing).
`;

function fail(code, msg) {
  process.stderr.write(`onnxruntime: ${msg.replace(/\s*\n\s*/g, ' ')}\n`);
  process.exit(code);
}

function positiveInt(v, opt) {
  if (!/^\d+$/.test(v || '') || Number(v) < 1 || Number(v) > 100000) throw new BadInput(`${opt} must be a positive integer, got '${v}'`);
  return Number(v);
}

function parseArgs(argv) {
  const o = { threads: 1, runs: 1, shapes: [], precision: 'fp32', optimization: null, profile: null };
  if (argv[0] === '-h' || argv[0] === '--help') { process.stdout.write(USAGE); process.exit(0); }
  if (argv[0] === '-V' || argv[0] === '--version') {
    process.stdout.write(`onnxruntime (parity backend) onnxruntime-node ${ortVersion()}\n`);
    process.exit(0);
  }
  if (argv[0] !== 'run') throw new BadInput(`expected the command 'run' (see --help), got '${argv[0] || ''}'`);
  for (let i = 1; i < argv.length; i++) {
    let a = argv[i], v;
    const eq = a.indexOf('=');
    if (a.startsWith('--') && eq > 0) { v = a.slice(eq + 1); a = a.slice(0, eq); }
    const need = () => {
      if (v !== undefined) return v;
      if (i + 1 >= argv.length) throw new BadInput(`${a} needs a value`);
      return argv[++i];
    };
    switch (a) {
      case '--model': o.model = need(); break;
      case '--input': case '-i': o.input = need(); break;
      case '--output': case '-o': o.output = need(); break;
      case '--threads': o.threads = positiveInt(need(), a); break;
      case '--runs': o.runs = positiveInt(need(), a); break;
      case '--stats': o.stats = need(); break;
      case '--profile': o.profile = need(); break;
      case '--input-shape': o.shapes.push(need()); break;
      case '--precision': o.precision = need(); break;
      case '--optimization': o.optimization = need(); break;
      case '-h': case '--help': process.stdout.write(USAGE); process.exit(0); break;
      default: throw new BadInput(`unknown option '${argv[i]}' (see --help)`);
    }
  }
  if (!o.model || !o.input || !o.output) throw new BadInput('missing --model, --input or --output');
  if (o.precision !== 'fp32')
    throw new BadInput(`--precision ${o.precision}: the onnxruntime backend runs the model's own types only (fp32)`);
  if (o.optimization !== null && !['disabled', 'basic', 'extended', 'all'].includes(o.optimization))
    throw new BadInput(`--optimization must be disabled, basic, extended or all, got '${o.optimization}'`);
  if (o.threads > 256) throw new BadInput('--threads must be 1..256');
  return o;
}

function loadOrt() {
  try {
    return require('onnxruntime-node');
  } catch (err) {
    fail(3, `cannot load onnxruntime-node (${err.code || err.message}); run tools/deps.sh, which runs ` +
            `'npm ci --onnxruntime-node-install=skip' in the repository root`);
  }
  return null;
}

function ortVersion() {
  try {
    return require('onnxruntime-node/package.json').version;
  } catch (_) {
    return 'missing';
  }
}

// --input-shape NAME=1x3x224x224 -> Map name -> dims.
function parseShapes(specs) {
  const m = new Map();
  for (const s of specs) {
    const eq = s.lastIndexOf('=');
    if (eq <= 0 || !/^\d+(x\d+)*$/.test(s.slice(eq + 1)))
      throw new BadInput(`--input-shape '${s}': expected NAME=1x3x320x320`);
    m.set(s.slice(0, eq), s.slice(eq + 1).split('x').map(Number));
  }
  return m;
}

// Binds one tensor set to the session's inputs, checking what ORT would
// otherwise report as an opaque run failure.
function bindInputs(ort, session, set, shapes, where) {
  const feeds = {};
  const meta = new Map((session.inputMetadata || []).map((m) => [m.name, m]));
  for (const [name, t] of set) {
    if (!session.inputNames.includes(name))
      throw new BadInput(`${where}: input tensor '${name}': the model has no input of that name`);
    const m = meta.get(name);
    if (m && m.isTensor && m.type !== t.type)
      throw new BadInput(`${where}: input '${name}': expected ${m.type}, got ${t.type}`);
    if (m && m.isTensor && m.shape.length) {
      const bad = m.shape.length !== t.dims.length ||
                  m.shape.some((d, k) => typeof d === 'number' && d >= 0 && d !== t.dims[k]);
      if (bad) throw new BadInput(`${where}: input '${name}': expected shape [${m.shape.join(',')}], got [${t.dims.join(',')}]`);
    }
    const want = shapes.get(name);
    if (want && want.join('x') !== t.dims.join('x'))
      throw new BadInput(`${where}: input '${name}': --input-shape says ${want.join('x')}, the tensor is ${t.dims.join('x') || 'a scalar'}`);
    feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
  }
  for (const name of session.inputNames)
    if (!(name in feeds)) throw new BadInput(`${where}: input '${name}' is missing`);
  for (const name of shapes.keys())
    if (!session.inputNames.includes(name))
      throw new BadInput(`--input-shape '${name}': the model has no input named '${name}'`);
  return feeds;
}

function round6(x) {
  return Number(x.toPrecision(6));
}

function latency(times) {
  const t = times.slice().sort((a, b) => a - b), n = t.length;
  const median = n % 2 ? t[(n - 1) / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
  return { min_ms: round6(t[0]), median_ms: round6(median), max_ms: round6(t[n - 1]), runs: n };
}

// Runs one sample `runs` times; writes its outputs into the folder outDir.
async function runSample(ort, session, o, shapes, inDir, outDir) {
  const feeds = bindInputs(ort, session, npy.readTensorSet(inDir), shapes, inDir);
  const times = [];
  let results;
  for (let r = 0; r < o.runs; r++) {
    const t0 = process.hrtime.bigint();
    try {
      results = await session.run(feeds);
    } catch (err) {
      throw new Error(`${inDir}: onnxruntime run failed: ${err.message}`);
    }
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  fs.mkdirSync(outDir, { recursive: true });
  const out = new Map();
  for (const name of session.outputNames) {
    const t = results[name];
    if (t.type === 'string') throw new Error(`output '${name}' is a string tensor, which .npy cannot hold`);
    out.set(name, { type: t.type, dims: Array.from(t.dims), data: t.data });
  }
  npy.writeTensorSet(outDir, out);
  return latency(times);
}

function removeTree(p) {
  try { fs.rmSync(p, { recursive: true, force: true }); } catch (_) { /* best effort */ }
}

let staging = null;   // OUT.tmp.PID while it exists, removed on any failure
let profDir = null;   // the folder ONNX Runtime writes its trace into, removed at exit

// --profile: ONNX Runtime writes PREFIX_DATE.json when the session's
// profiling ends; it starts at session creation and cannot be paused
// (onnxruntime-node's startProfiling is a no-op), so the warm-up is cut out
// of the trace afterwards: every event inside the first model_run's span.
// Loading and initialisation events stay.
function finishProfile(session, file) {
  session.endProfiling();
  const names = fs.readdirSync(profDir).filter((f) => f.endsWith('.json'));
  if (names.length !== 1) throw new Error(`onnxruntime wrote ${names.length} profile files, expected 1`);
  let events = JSON.parse(fs.readFileSync(path.join(profDir, names[0]), 'utf8'));
  const runs = events.filter((e) => e.cat === 'Session' && e.name === 'model_run').sort((a, b) => a.ts - b.ts);
  if (runs.length > 1) {
    const t0 = runs[0].ts, t1 = runs[0].ts + runs[0].dur;
    events = events.filter((e) => !(e.ts >= t0 && e.ts <= t1 && (e.cat === 'Node' || e.ts + (e.dur || 0) <= t1)));
  }
  npy.writeAtomic(file, '[\n' + events.map((e) => JSON.stringify(e)).join(',\n') + '\n]\n');
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const shapes = parseShapes(o.shapes);
  let st;
  try { st = fs.statSync(o.input); } catch (_) { st = null; }
  if (!st || !st.isDirectory()) throw new BadInput(`${o.input}: input is not a folder`);
  if (!fs.existsSync(o.model)) throw new BadInput(`${o.model}: no such model file`);
  const ort = loadOrt();
  let session;
  try {
    const opts = {
      executionProviders: ['cpu'], intraOpNumThreads: o.threads, interOpNumThreads: 1,
      executionMode: 'sequential', logSeverityLevel: 3,   // errors only: no initializer chatter
    };
    if (o.optimization) opts.graphOptimizationLevel = o.optimization;
    if (o.profile) {
      profDir = fs.mkdtempSync(path.join(os.tmpdir(), 'parity-ort-profile-'));
      opts.enableProfiling = true;
      opts.profileFilePrefix = path.join(profDir, 'ort');
    }
    session = await ort.InferenceSession.create(o.model, opts);
  } catch (err) {
    throw new BadInput(`${o.model}: onnxruntime cannot load the model: ${err.message}`);
  }

  const out = o.output.replace(/\/+$/, '') || o.output;
  staging = `${out}.tmp.${process.pid}`;
  removeTree(staging);
  fs.mkdirSync(staging, { recursive: true });
  const samples = [];
  if (npy.isTensorSet(o.input)) {
    samples.push({ ...(await runSample(ort, session, o, shapes, o.input, staging)), sample: '.' });
  } else {
    for (const name of npy.listDir(o.input)) {
      const inDir = path.join(o.input, name);
      if (!fs.statSync(inDir).isDirectory()) continue;
      const s = await runSample(ort, session, o, shapes, inDir, path.join(staging, name));
      samples.push({ ...s, sample: name });
    }
    if (!samples.length) throw new BadInput(`${o.input}: no tensor set found (no .npy/.pb files, no sample folders)`);
  }
  if (o.profile) finishProfile(session, o.profile);
  // Swap the finished folder in whole, replacing an older OUT.
  const old = `${out}.old.${process.pid}`;
  const had = fs.existsSync(out);
  if (had) fs.renameSync(out, old);
  try {
    fs.renameSync(staging, out);
  } catch (err) {
    if (had) fs.renameSync(old, out);
    throw err;
  }
  staging = null;
  if (had) removeTree(old);
  if (o.stats) npy.writeAtomic(o.stats, JSON.stringify({ threads: o.threads, samples }, null, 1) + '\n');
}

function cleanUp() {
  if (staging) removeTree(staging);
  if (profDir) removeTree(profDir);
}

for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(sig, () => {
    cleanUp();
    process.exit(128 + os.constants.signals[sig]);
  });
}

main().then(() => { cleanUp(); process.exit(0); }, (err) => {
  cleanUp();
  if (err instanceof BadInput) fail(2, err.message);
  fail(3, err.message || String(err));
});
