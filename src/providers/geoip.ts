/**
 * Where a login comes from (contract.md#d16): country and city from a MaxMind database when GEOIP_DB names
 * one, and always the client's network (IPv4 /24, IPv6 /48), which needs no database.
 */
import { isIPv4, isIPv6 } from "node:net";
import { open, type CityResponse, type Reader } from "maxmind";

export interface Location {
  country: string | null;
  city: string | null;
}

export interface GeoLocator {
  locate(ip: string): Location;
}

const nowhere: Location = { country: null, city: null };

export const noGeoLocator: GeoLocator = { locate: () => nowhere };

/** Opens the database once at start; lookups are in-memory and synchronous. */
export async function openGeoLocator(path: string | undefined): Promise<GeoLocator> {
  if (path === undefined) return noGeoLocator;
  const reader: Reader<CityResponse> = await open<CityResponse>(path, { cache: { max: 10_000 } });
  return {
    locate(ip) {
      let record: CityResponse | null = null;
      try {
        // An IPv4 client on a dual-stack socket shows as ::ffff:a.b.c.d; the database keys it as a.b.c.d.
        record = reader.get(ip.startsWith("::ffff:") && isIPv4(ip.slice(7)) ? ip.slice(7) : ip);
      } catch {
        return nowhere; // not an IP the database understands
      }
      return { country: record?.country?.iso_code ?? null, city: record?.city?.names?.en ?? null };
    },
  };
}

/** The network a login came from: the IPv4 /24 or IPv6 /48 around the address. */
export function networkOf(ip: string): string {
  const v4 = ip.startsWith("::ffff:") && isIPv4(ip.slice(7)) ? ip.slice(7) : ip;
  if (isIPv4(v4)) return `${v4.split(".").slice(0, 3).join(".")}.0/24`;
  if (isIPv6(ip)) {
    const [head = "", tail = ""] = ip.toLowerCase().split("::");
    const left = head ? head.split(":") : [];
    const right = tail ? tail.split(":") : [];
    const full = [...left, ...Array(8 - left.length - right.length).fill("0"), ...right];
    return `${full
      .slice(0, 3)
      .map((h) => h.replace(/^0+(?=.)/, ""))
      .join(":")}::/48`;
  }
  return ip;
}
