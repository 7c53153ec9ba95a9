import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { nativeModuleDirs } from "../../src/cdk/native-modules.js";
import { OptionsError } from "../../src/core/errors.js";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const fake = mkdtempSync(join(tmpdir(), "eonce-native-"));
afterAll(() => rmSync(fake, { recursive: true, force: true }));

function pkg(name: string, manifest: Record<string, unknown>): void {
  const dir = join(fake, "node_modules", name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name, version: "1.0.0", ...manifest }));
}

const names = (dirs: string[], root: string) =>
  dirs.map((d) => d.slice(join(root, "node_modules").length + 1));

describe("native modules", () => {
  it("sharp: the package, its dependencies and the installed Linux glibc binaries of the architecture", () => {
    const dirs = nativeModuleDirs(repo, ["sharp"], "x86_64");
    expect(names(dirs, repo)).toEqual([
      "@img/colour",
      "@img/sharp-libvips-linux-x64",
      "@img/sharp-linux-x64",
      "detect-libc",
      "semver",
      "sharp",
    ]);
  });

  it("refuses an architecture whose binaries are not installed, and says what to do", () => {
    expect(() => nativeModuleDirs(repo, ["sharp"], "arm64")).toThrow(OptionsError);
    expect(() => nativeModuleDirs(repo, ["sharp"], "arm64")).toThrow(
      /sharp has no binaries installed for Lambda \(linux, arm64, glibc\); installed: @img\/sharp-libvips-linux-x64, @img\/sharp-linux-x64\. Install them \(npm install --no-save --os=linux --cpu=arm64 --libc=glibc sharp\)/,
    );
  });

  it("refuses a package that is not installed", () => {
    expect(() => nativeModuleDirs(repo, ["no-such-package-here"], "arm64")).toThrow(
      /no-such-package-here .* is not installed/,
    );
  });

  it("follows npm's os/cpu/libc rules, including exclusions", () => {
    pkg("native", {
      dependencies: { helper: "1" },
      optionalDependencies: {
        "native-linux-arm64": "1",
        "native-linux-x64": "1",
        "native-musl-arm64": "1",
        "native-darwin": "1",
        "native-missing": "1",
      },
    });
    pkg("helper", {});
    pkg("native-linux-arm64", { os: ["linux"], cpu: ["arm64"], libc: ["glibc"] });
    pkg("native-linux-x64", { os: ["linux"], cpu: ["!arm64"] });
    pkg("native-musl-arm64", { os: ["linux"], cpu: ["arm64"], libc: ["musl"] });
    pkg("native-darwin", { os: ["darwin"] });
    expect(names(nativeModuleDirs(fake, ["native"], "arm64"), fake)).toEqual([
      "helper",
      "native",
      "native-linux-arm64",
    ]);
    expect(names(nativeModuleDirs(fake, ["native"], "x86_64"), fake)).toEqual([
      "helper",
      "native",
      "native-linux-x64",
    ]);
  });
});
