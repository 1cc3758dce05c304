// npy.js — .npy files and tensor-set folders for the node backends, byte for
// byte the format parity's stages read and write (docs/design.md "Data formats"):
// NumPy format v1-v3, little-endian, C order; written with v1 headers padded
// to 64 bytes, exactly as numpy.save and parity's npy_serialize do, so the
// same tensor gives the same file whichever program wrote it. File names are
// tensor names percent-encoded like name_encode() in stages/lib/util/fsutil.c.
'use strict';

const fs = require('fs');
const path = require('path');

// A failure the user can fix (exit 2 in the backend contract).
class BadInput extends Error {}

// descr -> ONNX Runtime tensor type, element size, typed-array constructor.
const TYPES = {
  '<f4': ['float32', 4, Float32Array], '<f2': ['float16', 2, Uint16Array],
  '<f8': ['float64', 8, Float64Array],
  '|i1': ['int8', 1, Int8Array], '<i1': ['int8', 1, Int8Array],
  '<i2': ['int16', 2, Int16Array], '<i4': ['int32', 4, Int32Array],
  '<i8': ['int64', 8, BigInt64Array],
  '|u1': ['uint8', 1, Uint8Array], '<u1': ['uint8', 1, Uint8Array],
  '<u2': ['uint16', 2, Uint16Array], '<u4': ['uint32', 4, Uint32Array],
  '<u8': ['uint64', 8, BigUint64Array],
  '|b1': ['bool', 1, Uint8Array], '<b1': ['bool', 1, Uint8Array],
};
// tensor type -> the descr written (the first spelling above, as numpy writes it).
const DESCR = {};
for (const [d, [t]] of Object.entries(TYPES)) if (!(t in DESCR)) DESCR[t] = d;

function isPlain(c) {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) ||
         c === 0x2e || c === 0x5f || c === 0x2d;
}

// Tensor name -> file stem: bytes outside [A-Za-z0-9._-], and a leading '.',
// become %XX (upper-case hex), over the name's UTF-8 bytes.
function nameEncode(name) {
  const b = Buffer.from(name, 'utf8');
  let s = '';
  for (let i = 0; i < b.length; i++) {
    if (isPlain(b[i]) && !(i === 0 && b[i] === 0x2e)) s += String.fromCharCode(b[i]);
    else s += '%' + b[i].toString(16).toUpperCase().padStart(2, '0');
  }
  return s;
}

// File stem -> tensor name, or null when a %XX escape is malformed.
function nameDecode(stem) {
  const bytes = [];
  for (let i = 0; i < stem.length; i++) {
    if (stem[i] === '%') {
      const h = stem.slice(i + 1, i + 3);
      if (!/^[0-9A-Fa-f]{2}$/.test(h)) return null;
      bytes.push(parseInt(h, 16));
      i += 2;
    } else {
      bytes.push(...Buffer.from(stem[i], 'utf8'));
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

function headerValue(h, key, file) {
  const m = new RegExp("['\"]" + key + "['\"]\\s*:\\s*").exec(h);
  if (!m) throw new BadInput(`${file}: .npy header has no '${key}'`);
  return h.slice(m.index + m[0].length);
}

function parseHeader(h, file) {
  const d = /^['"]([^'"]*)['"]/.exec(headerValue(h, 'descr', file));
  if (!d) throw new BadInput(`${file}: .npy header has a malformed 'descr'`);
  if (!(d[1] in TYPES))
    throw new BadInput(`${file}: .npy element type '${d[1]}' is not supported (little-endian numeric or bool only)`);
  const f = headerValue(h, 'fortran_order', file);
  if (f.startsWith('True')) throw new BadInput(`${file}: Fortran-order .npy is not supported (save C order)`);
  if (!f.startsWith('False')) throw new BadInput(`${file}: .npy header has a malformed 'fortran_order'`);
  const s = /^\(([^)]*)\)/.exec(headerValue(h, 'shape', file));
  if (!s) throw new BadInput(`${file}: .npy header has a malformed 'shape'`);
  const dims = s[1].split(',').map((x) => x.trim()).filter((x) => x !== '');
  for (const x of dims)
    if (!/^\d{1,15}$/.test(x)) throw new BadInput(`${file}: .npy shape has a bad dimension '${x}'`);
  return { descr: d[1], dims: dims.map(Number) };
}

// Reads one .npy file: {type, dims, data (an aligned typed array)}.
function readNpy(file) {
  let buf;
  try {
    buf = fs.readFileSync(file);
  } catch (err) {
    throw new BadInput(`${file}: cannot read: ${err.message}`);
  }
  if (buf.length < 10 || buf.toString('latin1', 0, 6) !== '\x93NUMPY')
    throw new BadInput(`${file}: not a .npy file (bad magic)`);
  const major = buf[6];
  if (major < 1 || major > 3) throw new BadInput(`${file}: .npy version ${major} is not supported (1-3)`);
  const pre = major === 1 ? 10 : 12;
  if (buf.length < pre) throw new BadInput(`${file}: .npy header is truncated`);
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  if (pre + hlen > buf.length) throw new BadInput(`${file}: .npy header is truncated`);
  const header = buf.toString(major === 3 ? 'utf8' : 'latin1', pre, pre + hlen);
  const { descr, dims } = parseHeader(header, file);
  const [type, size, Ctor] = TYPES[descr];
  const count = dims.reduce((a, b) => a * b, 1);
  if (!Number.isSafeInteger(count * size)) throw new BadInput(`${file}: .npy shape is too large`);
  const have = buf.length - pre - hlen;
  if (have !== count * size)
    throw new BadInput(`${file}: .npy data holds ${have} bytes, the header's shape (${dims.join(', ')}) needs ${count * size}`);
  // Copy into a fresh ArrayBuffer: the file's data offset need not be aligned.
  const data = new Ctor(count);
  Buffer.from(data.buffer).set(buf.subarray(pre + hlen));
  if (type === 'bool') for (let i = 0; i < count; i++) data[i] = data[i] ? 1 : 0;
  return { type, dims, data };
}

// Serialises a tensor as .npy bytes: v1 header padded to 64 bytes.
function npyBytes(type, dims, data) {
  const descr = DESCR[type];
  if (!descr) throw new Error(`element type ${type} cannot be written as .npy`);
  const shape = dims.length === 1 ? `${dims[0]},` : dims.join(', ');
  const dict = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${shape}), }`;
  let pre = 10;
  let total = Math.ceil((pre + dict.length + 1) / 64) * 64;
  if (total - pre > 0xffff) { pre = 12; total = Math.ceil((pre + dict.length + 1) / 64) * 64; }
  const head = Buffer.alloc(total, 0x20);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = pre === 10 ? 1 : 2;
  head[7] = 0;
  if (pre === 10) head.writeUInt16LE(total - pre, 8);
  else head.writeUInt32LE(total - pre, 8);
  head.write(dict, pre, 'latin1');
  head[total - 1] = 0x0a;
  let body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (type === 'bool') body = Buffer.from(body.map((v) => (v ? 1 : 0)));
  return Buffer.concat([head, body]);
}

// Writes a file atomically: a temporary file in the same folder, then rename.
function writeAtomic(file, bytes) {
  const tmp = `${file}.tmp.${process.pid}`;
  try {
    fs.writeFileSync(tmp, bytes);
    fs.renameSync(tmp, file);
  } catch (err) {
    try { fs.unlinkSync(tmp); } catch (_) { /* nothing left to remove */ }
    throw err;
  }
}

function byteOrder(a, b) {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

function listDir(dir) {
  try {
    return fs.readdirSync(dir).sort(byteOrder);
  } catch (err) {
    throw new BadInput(`${dir}: cannot open folder: ${err.message}`);
  }
}

// A tensor set is a folder holding .npy (or .pb) files; otherwise IN is a
// folder of them, one per sample (the same rule as parity's infer).
function isTensorSet(dir) {
  return listDir(dir).some((f) => (f.length > 4 && f.endsWith('.npy')) || (f.length > 3 && f.endsWith('.pb')));
}

// Reads a tensor-set folder: Map name -> {type, dims, data}, in file order.
function readTensorSet(dir) {
  const set = new Map();
  for (const f of listDir(dir)) {
    const full = path.join(dir, f);
    if (f.endsWith('.pb'))
      throw new BadInput(`${full}: ONNX TensorProto (.pb) inputs are not read by this backend; convert them to .npy`);
    if (!f.endsWith('.npy') || f.length <= 4) continue;
    const name = nameDecode(f.slice(0, -4));
    if (name === null) throw new BadInput(`${full}: file name is not a valid encoded tensor name`);
    set.set(name, readNpy(full));
  }
  return set;
}

// Writes a tensor set into an existing folder.
function writeTensorSet(dir, set) {
  for (const [name, t] of set) writeAtomic(path.join(dir, nameEncode(name) + '.npy'), npyBytes(t.type, t.dims, t.data));
}

module.exports = {
  BadInput, nameEncode, nameDecode, readNpy, npyBytes, writeAtomic, listDir, isTensorSet,
  readTensorSet, writeTensorSet,
};
