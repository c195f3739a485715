import ipaddr from "ipaddr.js";

/**
 * Whether a webhook may connect to an IP address. Only global unicast is allowed: loopback, RFC 1918,
 * carrier-grade NAT, link-local (169.254.169.254 and other cloud metadata), multicast, reserved, IPv6
 * unique-local (fd00:ec2::254), and IPv6 forms that embed an IPv4 address (mapped ::ffff:127.0.0.1,
 * NAT64, 6to4, Teredo) are refused. The classification is ipaddr.js's; this file only decides which
 * ranges are acceptable.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === "ipv6" && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) {
    parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  }
  return parsed.range() === "unicast";
}

/** The reason an address is refused, for attempt logs and errors ("loopback", "private", "linkLocal", …). */
export function addressRange(address: string): string {
  if (!ipaddr.isValid(address)) return "invalid";
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === "ipv6" && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) {
    parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  }
  return parsed.range();
}
