// Minimal MaxMind DB (.mmdb, format v2.0) writer, for tests that need a small GeoIP database
// without downloading one. Spec: https://maxmind.github.io/MaxMind-DB/
//
// File layout:  [search tree][16 zero bytes][data section]["\xAB\xCD\xEFMaxMind.com"][metadata map]
import { isIP } from "node:net";

export type MmdbValue = string | number | boolean | MmdbValue[] | { [key: string]: MmdbValue };
export interface MmdbEntry {
  /** CIDR, IPv4 ("198.51.100.0/24") or IPv6 ("2001:db8::/32"). */
  network: string;
  data: { [key: string]: MmdbValue };
}
export interface MmdbOptions {
  databaseType?: string;
  languages?: string[];
  description?: string;
}

const METADATA_MARKER = Buffer.from("abcdef4d61784d696e642e636f6d", "hex"); // "\xAB\xCD\xEFMaxMind.com"
const BUILD_EPOCH = 1_700_000_000; // fixed, so output is deterministic

// ---- Data section encoding ---------------------------------------------------------------
// Each field starts with a control byte: top 3 bits = type, low 5 bits = payload size.
// Types 1..7 fit in those 3 bits; "extended" types (8..15) put 0 there and add a second byte
// holding (type - 7). Sizes >= 29 spill into 1..3 extra bytes (with offsets 29 / 285 / 65821).
const T = { utf8: 2, double: 3, uint16: 5, uint32: 6, map: 7, uint64: 9, array: 11, boolean: 14 } as const;

function ctrl(type: number, size: number): Buffer {
  let sizeBits: number;
  let extra: Buffer;
  if (size < 29) [sizeBits, extra] = [size, Buffer.alloc(0)];
  else if (size < 285) [sizeBits, extra] = [29, Buffer.from([size - 29])];
  else if (size < 65_821) [sizeBits, extra] = [30, uintBytes(size - 285, 2)];
  else [sizeBits, extra] = [31, uintBytes(size - 65_821, 3)];
  // The extended-type byte comes *before* the extra size bytes.
  const head = type <= 7 ? [(type << 5) | sizeBits] : [sizeBits, type - 7];
  return Buffer.concat([Buffer.from(head), extra]);
}

function uintBytes(n: number, len: number): Buffer {
  const b = Buffer.alloc(len);
  if (len > 0) b.writeUIntBE(n, 0, len);
  return b;
}

/** Unsigned ints use the fewest big-endian bytes needed (0 -> zero-length payload). */
function encodeUint(type: number, n: number): Buffer {
  let len = 0;
  while (len < 6 && n >= 2 ** (8 * len)) len++;
  return Buffer.concat([ctrl(type, len), uintBytes(n, len)]);
}

// Internally, a bigint is encoded as uint64 (only the metadata's build_epoch needs it).
type Encodable = MmdbValue | bigint | Encodable[] | { [key: string]: Encodable };

function encode(value: Encodable): Buffer {
  if (typeof value === "bigint") {
    const payload = Buffer.alloc(8);
    payload.writeBigUInt64BE(value);
    return Buffer.concat([ctrl(T.uint64, 8), payload]);
  }
  if (typeof value === "string") {
    const bytes = Buffer.from(value, "utf8");
    return Buffer.concat([ctrl(T.utf8, bytes.length), bytes]);
  }
  if (typeof value === "boolean") return ctrl(T.boolean, value ? 1 : 0); // value lives in the size bits
  if (typeof value === "number") {
    if (Number.isInteger(value) && value >= 0 && value < 2 ** 32) {
      return encodeUint(value < 2 ** 16 ? T.uint16 : T.uint32, value);
    }
    const payload = Buffer.alloc(8);
    payload.writeDoubleBE(value);
    return Buffer.concat([ctrl(T.double, 8), payload]);
  }
  if (Array.isArray(value)) return Buffer.concat([ctrl(T.array, value.length), ...value.map(encode)]);
  // Map: size = number of pairs; keys are always utf8 strings.
  const pairs = Object.entries(value);
  return Buffer.concat([ctrl(T.map, pairs.length), ...pairs.flatMap(([k, v]) => [encode(k), encode(v)])]);
}

// ---- Search tree -------------------------------------------------------------------------
/** Parse a CIDR into 16 address bytes + prefix length in the 128-bit tree (IPv4 sits under ::/96). */
function parseNetwork(cidr: string): { bytes: Uint8Array; prefix: number } {
  const [addr = "", len = ""] = cidr.split("/");
  const family = isIP(addr);
  const prefix = Number(len);
  const bytes = new Uint8Array(16);
  if (family === 4 && Number.isInteger(prefix) && prefix >= 0 && prefix <= 32) {
    addr.split(".").forEach((octet, i) => (bytes[12 + i] = Number(octet)));
    return { bytes, prefix: prefix + 96 };
  }
  if (family === 6 && !addr.includes(".") && Number.isInteger(prefix) && prefix >= 1 && prefix <= 128) {
    const [head = "", tail] = addr.split("::");
    const h = head ? head.split(":") : [];
    const t = tail ? tail.split(":") : [];
    const groups = [...h, ...Array<string>(8 - h.length - t.length).fill("0"), ...t];
    groups.forEach((g, i) => {
      bytes[2 * i] = parseInt(g, 16) >> 8;
      bytes[2 * i + 1] = parseInt(g, 16) & 0xff;
    });
    return { bytes, prefix };
  }
  throw new Error(`mmdb-writer: unsupported network ${JSON.stringify(cidr)}`);
}

// A record is a child node, a data entry (by index), or empty.
type Rec = { node: TrieNode } | { data: number } | null;
interface TrieNode {
  recs: [Rec, Rec];
}

const bitAt = (bytes: Uint8Array, i: number): 0 | 1 => (((bytes[i >> 3] ?? 0) >> (7 - (i & 7))) & 1) as 0 | 1;

/** Builds an ip_version 6 database readable by `maxmind` / `mmdb-lib` (and libmaxminddb). */
export function buildMmdb(entries: MmdbEntry[], options: MmdbOptions = {}): Buffer {
  // Insert shorter prefixes first: a more specific network inserted later splits the
  // covering data record into a node whose both halves inherit the broader data.
  const nets = entries.map((e, index) => ({ ...parseNetwork(e.network), index })).sort((a, b) => a.prefix - b.prefix);
  const root: TrieNode = { recs: [null, null] };
  for (const { bytes, prefix, index } of nets) {
    let node = root;
    for (let i = 0; i < prefix - 1; i++) {
      const bit = bitAt(bytes, i);
      const rec = node.recs[bit];
      if (rec && "node" in rec) {
        node = rec.node;
        continue;
      }
      const child: TrieNode = { recs: [rec, rec] }; // null or inherited data
      node.recs[bit] = { node: child };
      node = child;
    }
    node.recs[bitAt(bytes, prefix - 1)] = { data: index };
  }

  // Number nodes breadth-first (root must be node 0); node_count is exactly this list's length.
  const nodes: TrieNode[] = [root];
  for (let i = 0; i < nodes.length; i++) {
    for (const rec of nodes[i]?.recs ?? []) if (rec && "node" in rec) nodes.push(rec.node);
  }
  const ids = new Map(nodes.map((n, i) => [n, i]));
  const nodeCount = nodes.length;

  // Data section: each distinct record encoded once (identical data share an offset).
  const chunks: Buffer[] = [];
  const offsets = new Map<string, number>();
  let dataSize = 0;
  const dataOffset = entries.map((e) => {
    const key = JSON.stringify(e.data);
    let off = offsets.get(key);
    if (off === undefined) {
      const buf = encode(e.data);
      off = dataSize;
      offsets.set(key, off);
      chunks.push(buf);
      dataSize += buf.length;
    }
    return off;
  });

  // Record values: < nodeCount -> node; == nodeCount -> "no data";
  // > nodeCount -> data at file offset (treeSize + value - nodeCount), i.e. the 16-byte
  // separator is counted, so a data-section offset `off` is stored as nodeCount + 16 + off.
  const value = (rec: Rec): number => (rec === null ? nodeCount : "node" in rec ? (ids.get(rec.node) ?? 0) : nodeCount + 16 + (dataOffset[rec.data] ?? 0));
  const maxValue = nodeCount + 16 + dataSize;
  const recordSize = maxValue < 2 ** 24 ? 24 : maxValue < 2 ** 28 ? 28 : 32;
  const nodeBytes = recordSize / 4; // two records per node
  const tree = Buffer.alloc(nodeCount * nodeBytes);
  nodes.forEach((n, i) => {
    const [l, r] = [value(n.recs[0]), value(n.recs[1])];
    const o = i * nodeBytes;
    if (recordSize === 32) {
      tree.writeUInt32BE(l, o);
      tree.writeUInt32BE(r, o + 4);
    } else {
      tree.writeUIntBE(l & 0xffffff, o, 3);
      tree.writeUIntBE(r & 0xffffff, o + nodeBytes - 3, 3);
      // 28-bit quirk: the middle byte holds the high nibbles, left's in the upper half.
      if (recordSize === 28) tree[o + 3] = ((l >>> 24) << 4) | (r >>> 24);
    }
  });

  const metadata = encode({
    node_count: nodeCount,
    record_size: recordSize,
    ip_version: 6,
    database_type: options.databaseType ?? "GeoIP2-City",
    languages: options.languages ?? ["en"],
    binary_format_major_version: 2,
    binary_format_minor_version: 0,
    description: { en: options.description ?? "Test database built by test/support/mmdb-writer.ts" },
    build_epoch: BigInt(BUILD_EPOCH), // the spec requires uint64 here
  });
  return Buffer.concat([tree, Buffer.alloc(16), ...chunks, METADATA_MARKER, metadata]);
}
