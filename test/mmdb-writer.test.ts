// The test-only .mmdb writer must produce files the real `maxmind` reader accepts.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import maxmind, { Reader, type CityResponse } from "maxmind";
import { buildMmdb, type MmdbEntry } from "./support/mmdb-writer.js";

const city = (iso: string, country: string, name: string) => ({
  country: { iso_code: iso, names: { en: country } },
  city: { names: { en: name } },
});
const DE = city("DE", "Germany", "Berlin");
const FR = city("FR", "France", "Paris");
const JP = city("JP", "Japan", "Tokyo");

const entries: MmdbEntry[] = [
  { network: "198.51.100.0/24", data: DE },
  { network: "203.0.113.0/24", data: FR },
  { network: "2001:db8:1::/48", data: JP },
];

function checkLookups(reader: Reader<CityResponse>): void {
  assert.deepEqual(reader.get("198.51.100.7"), DE);
  assert.deepEqual(reader.get("198.51.100.0"), DE);
  assert.deepEqual(reader.get("198.51.100.255"), DE);
  assert.deepEqual(reader.get("203.0.113.200"), FR);
  assert.deepEqual(reader.get("2001:db8:1::5"), JP);
  assert.deepEqual(reader.get("2001:db8:1:ffff:ffff:ffff:ffff:ffff"), JP);
  assert.deepEqual(reader.get("::cb00:71c8"), FR, "IPv4 lives under ::/96");
  for (const ip of ["192.0.2.1", "198.51.101.0", "203.0.112.255", "2001:db8:2::1", "2001:db8::1", "::1", "8.8.8.8"]) {
    assert.equal(reader.get(ip), null, ip);
  }
}

test("buildMmdb output is readable by maxmind.open and new Reader(buffer)", async () => {
  const buffer = buildMmdb(entries, { databaseType: "Latch-Test-City", description: "fixture" });
  const dir = mkdtempSync(join(tmpdir(), "mmdb-writer-"));
  try {
    const path = join(dir, "city.mmdb");
    writeFileSync(path, buffer);
    const opened = await maxmind.open<CityResponse>(path);
    checkLookups(opened);
    const direct = new Reader<CityResponse>(buffer);
    checkLookups(direct);

    const md = direct.metadata;
    assert.equal(md.databaseType, "Latch-Test-City");
    assert.equal(md.ipVersion, 6);
    assert.equal(md.recordSize, 24);
    assert.equal(md.binaryFormatMajorVersion, 2);
    assert.equal(md.binaryFormatMinorVersion, 0);
    assert.deepEqual(md.languages, ["en"]);
    assert.deepEqual(md.description, { en: "fixture" });
    assert.equal(md.buildEpoch.getTime(), 1_700_000_000_000);
    // Exact node count: the search tree is followed by exactly 16 zero bytes.
    const treeSize = md.nodeCount * md.nodeByteSize;
    assert.ok(md.nodeCount > 0);
    assert.deepEqual(buffer.subarray(treeSize, treeSize + 16), Buffer.alloc(16));
    assert.notDeepEqual(buffer.subarray(treeSize - 6, treeSize), Buffer.alloc(6), "last node is a real node");
    // One node per distinct proper bit-prefix of the inserted networks (counted independently).
    assert.equal(md.nodeCount, expectedNodeCount(["198.51.100.0/24", "203.0.113.0/24", "2001:db8:1::/48"]));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("buildMmdb encodes all value types and overlapping networks", () => {
  const data = {
    s: "ü",
    small: 7,
    zero: 0,
    big: 70_000,
    max: 2 ** 32 - 1,
    neg: -3,
    frac: 1.5,
    huge: 2 ** 40,
    t: true,
    f: false,
    arr: [1, "a", [true]],
    nested: { long: "x".repeat(300) },
  };
  const buffer = buildMmdb([
    { network: "10.0.0.0/8", data: { name: "wide" } },
    { network: "10.1.0.0/16", data },
    { network: "8000::/1", data: { name: "upper half" } },
  ]);
  const reader = new Reader<Record<string, unknown>>(buffer);
  assert.deepEqual(reader.get("10.1.2.3"), data);
  assert.deepEqual(reader.get("10.2.0.0"), { name: "wide" });
  assert.deepEqual(reader.get("10.0.255.255"), { name: "wide" });
  assert.equal(reader.get("11.0.0.0"), null);
  assert.deepEqual(reader.get("8000::1"), { name: "upper half" });
  assert.deepEqual(reader.get("ffff:ffff::"), { name: "upper half" });
  assert.equal(reader.get("7fff::"), null);
  assert.equal(reader.metadata.databaseType, "GeoIP2-City");
});

/** Independent node count: number of distinct proper prefixes (bit strings) of the networks. */
function expectedNodeCount(networks: string[]): number {
  const prefixes = new Set<string>();
  for (const n of networks) {
    const [addr = "", len = ""] = n.split("/");
    let bits: string;
    let prefix = Number(len);
    if (addr.includes(".")) {
      bits =
        "0".repeat(96) +
        addr
          .split(".")
          .map((o) => Number(o).toString(2).padStart(8, "0"))
          .join("");
      prefix += 96;
    } else {
      const [h = "", t = ""] = addr.split("::");
      const hs = h ? h.split(":") : [];
      const ts = t ? t.split(":") : [];
      const groups = [...hs, ...Array<string>(8 - hs.length - ts.length).fill("0"), ...ts];
      bits = groups.map((g) => parseInt(g, 16).toString(2).padStart(16, "0")).join("");
    }
    for (let i = 0; i < prefix; i++) prefixes.add(bits.slice(0, i));
  }
  return prefixes.size;
}

test("buildMmdb switches to 28-bit records when data offsets exceed 24 bits", () => {
  const big = "x".repeat(2 ** 24); // pushes the second record's data offset past 2^24
  const buffer = buildMmdb([
    { network: "192.0.2.0/24", data: { big } },
    { network: "2001:db8::/32", data: { name: "after big" } }, // ends in a left record...
    { network: "2001:db9::/32", data: { name: "right" } }, // ...and a right one (both high nibbles)
  ]);
  const reader = new Reader<Record<string, unknown>>(buffer);
  assert.equal(reader.metadata.recordSize, 28);
  assert.deepEqual(reader.get("2001:db8::1"), { name: "after big" });
  assert.equal((reader.get("192.0.2.1")?.["big"] as string).length, 2 ** 24);
  assert.deepEqual(reader.get("2001:db9::1"), { name: "right" });
  assert.equal(reader.get("2001:dba::"), null);
});
