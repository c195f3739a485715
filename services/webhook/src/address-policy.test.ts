import { describe, expect, it } from "vitest";
import { isPublicAddress } from "./address-policy.ts";

describe("webhook address policy", () => {
  it.each([
    "127.0.0.1",
    "127.1.2.3",
    "0.0.0.0",
    "10.0.0.1",
    "172.16.5.4",
    "192.168.1.1",
    "169.254.169.254",
    "100.100.100.200",
    "224.0.0.1",
    "255.255.255.255",
    "::1",
    "::",
    "fe80::1",
    "fc00::1",
    "fd00:ec2::254",
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "64:ff9b::a00:1",
    "2002:7f00:1::",
    "::127.0.0.1",
    "::7f00:1",
    "::ffff:7f00:1",
    "0:0:0:0:0:ffff:127.0.0.1",
    "0000:0000:0000:0000:0000:ffff:7f00:0001",
    "::ffff:0:127.0.0.1",
    "::ffff:169.254.169.254",
    "::ffff:a9fe:a9fe",
    "::10.0.0.1",
    "0:0:0:0:0:0:0:1",
    "0:0:0:0:0:0:0:0",
    "fe80::",
    "fe80::1%eth0",
    "febf::1",
    "fc00::",
    "fdff:ffff::1",
    "fec0::1",
    "ff02::1",
    "64:ff9b::",
    "64:ff9b::7f00:1",
    "64:ff9b:1::1",
    "100::1",
    "2001::1",
    "2001:db8::1",
    "2001:2::1",
    "2002::1",
    "3fff::1",
    "5f00::1",
    "4000::1",
    "192.0.2.1",
    "198.18.0.1",
    "240.0.0.1",
    "not an address",
  ])("refuses %s", (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });

  it.each(["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "::ffff:93.184.216.34", "::ffff:5db8:d822", "2a00:1450:4001::200e"])("allows %s", (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });

  it("sees through decimal and octal IPv4 spellings once the URL parser has normalised them", () => {
    expect(new URL("http://2130706433/").hostname).toBe("127.0.0.1");
    expect(new URL("http://0177.0.0.1/").hostname).toBe("127.0.0.1");
    expect(new URL("http://0x7f.1/").hostname).toBe("127.0.0.1");
    expect(isPublicAddress(new URL("http://2130706433/").hostname)).toBe(false);
  });
});
