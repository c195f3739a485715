import ipaddr from "ipaddr.js";

/** IPv6 global unicast (RFC 4291 §2.4): everything outside it is loopback, local, multicast or reserved. */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR("2000::/3");

/**
 * The address a connection really reaches: an IPv4-mapped IPv6 address (::ffff:a.b.c.d, in any of its
 * spellings, which the URL parser normalises to ::ffff:7f00:1 and the like) is its IPv4 address.
 */
function effectiveAddress(address: string): ipaddr.IPv4 | ipaddr.IPv6 {
  const parsed = ipaddr.parse(address);
  if (parsed.kind() === "ipv6" && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) return (parsed as ipaddr.IPv6).toIPv4Address();
  return parsed;
}

/**
 * Whether a webhook may connect to an IP address. Only global unicast is allowed: loopback, RFC 1918,
 * carrier-grade NAT, link-local (169.254.169.254 and other cloud metadata), multicast, reserved, IPv6
 * unique-local (fd00:ec2::254), and IPv6 forms that embed an IPv4 address (NAT64, 6to4, Teredo) are
 * refused. IPv6 is an allow-list — inside 2000::/3 and not one of ipaddr.js's special ranges there — so
 * a spelling ipaddr.js files as plain unicast, such as the IPv4-compatible ::127.0.0.1 (which the URL
 * parser turns into ::7f00:1), is refused too; a mapped ::ffff:a.b.c.d is judged as its IPv4 address.
 */
export function isPublicAddress(address: string): boolean {
  return addressRange(address) === "unicast";
}

/** The reason an address is refused, for attempt logs and errors ("loopback", "private", "linkLocal", …). */
export function addressRange(address: string): string {
  if (!ipaddr.isValid(address)) return "invalid";
  const parsed = effectiveAddress(address);
  if (parsed.kind() === "ipv6" && !(parsed as ipaddr.IPv6).match(GLOBAL_UNICAST_V6)) {
    const range = parsed.range();
    return range === "unicast" ? "reserved" : range;
  }
  return parsed.range();
}
