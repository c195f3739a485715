import { cpSync, existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, isAbsolute, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build, type Plugin } from "esbuild";
import { SERVICE_NODE_FLAGS } from "./node-flags.ts";

/**
 * Production and the bench run one JavaScript bundle per process instead of the TypeScript sources
 * through tsx: tsx's loader costs 35–45 MB RSS per process (docs/decisions.md, "TypeScript runs
 * through tsx in development, bundles in production"). `npm start` and the tests still run sources.
 *
 * Our own code (@subdata/* workspaces, resolved to their .ts sources) is bundled; every third-party
 * package stays external and is loaded from node_modules at run time, so the image ships the
 * production node_modules plus dist/ and nothing else.
 *
 *   npm run build        # writes dist/bin/<name>.mjs (+ .map) and dist/migrations/
 */

/** Each deployable process: its bundle name (dist/bin/<name>.mjs) and its entry point from the repository root. */
export const BUNDLE_ENTRIES = {
  gateway: "gateway/src/main.ts",
  query: "services/query/src/main.ts",
  auth: "services/auth/src/main.ts",
  webhook: "services/webhook/src/main.ts",
  relay: "services/relay/src/main.ts",
  console: "services/console/src/main.ts",
  subdata: "services/cli/src/main.ts",
} as const satisfies Record<string, string>;

export type BundleName = keyof typeof BUNDLE_ENTRIES;

const DIST_DIR = "dist";

/** A bundle's path relative to the repository root (the image's WORKDIR), e.g. dist/bin/gateway.mjs; or under another output folder. */
export function bundlePathFor(name: string, outDir: string = DIST_DIR): string {
  return `${outDir}/bin/${name}.mjs`;
}

/** The bundle built from an entry point (services/query/src/main.ts → query), among BUNDLE_ENTRIES and `extraEntries`. */
export function bundleNameFor(entry: string, extraEntries: Readonly<Record<string, string>> = {}): string {
  const found = Object.entries({ ...BUNDLE_ENTRIES, ...extraEntries }).find(([, source]) => source === entry);
  if (!found) throw new Error(`no bundle is built from ${entry} (deploy/local/src/bundle.ts BUNDLE_ENTRIES)`);
  return found[0];
}

/** The module every bundle preloads (`--import`), written beside the bundles by buildBundles: dist/bin/source-maps.mjs. */
const SOURCE_MAPS_PRELOAD = "source-maps";

/**
 * Source maps for the bundles only, so stack traces and CPU profiles name the .ts sources as tsx does.
 * `--enable-source-maps` would also parse the maps every package in node_modules ships, with the
 * sources they embed, and keep them: 3.3 MB more live heap in the idle gateway, and 17–23 MB more
 * gateway RSS at its peaks under load (docs/decisions.md, "TypeScript runs through tsx in development,
 * bundles in production").
 */
const SOURCE_MAPS_PRELOAD_TEXT = `// Preloaded before every bundle (--import): source maps for dist/, not for node_modules.
import { setSourceMapsSupport } from "node:module";

setSourceMapsSupport(true, { nodeModules: false, generatedCode: false });
`;

/**
 * What a bundle needs from `node` beyond SERVICE_NODE_FLAGS: the source-maps preload in `outDir`/bin.
 * A relative outDir is relative to the working directory, as the bundle paths are; the image's
 * NODE_OPTIONS holds these flags for dist/ (docker-files.test.ts).
 */
function bundleNodeFlags(outDir: string = DIST_DIR): string[] {
  const preload = bundlePathFor(SOURCE_MAPS_PRELOAD, outDir);
  return [`--import=${isAbsolute(preload) ? preload : `./${preload}`}`];
}

/** The flags bundleNodeFlags gives for the image's dist/, relative to its WORKDIR. */
export const BUNDLE_NODE_FLAGS: readonly string[] = bundleNodeFlags();

/** The arguments of `node` for one bundle, as the image runs it (paths relative to the repository root unless `outDir` is absolute). */
export function bundleNodeArgs(name: string, outDir?: string): string[] {
  return [...SERVICE_NODE_FLAGS, ...bundleNodeFlags(outDir), bundlePathFor(name, outDir)];
}

export interface BuildOptions {
  repoRoot: string;
  /** Where dist/ goes; the repository's dist/ unless given. */
  outDir?: string;
  /** More entries beside BUNDLE_ENTRIES (the bench adds its baseline server), name → path from repoRoot. */
  extraEntries?: Readonly<Record<string, string>>;
}

export interface BuildResult {
  /** Written bundles, name → absolute path. */
  bundles: Record<string, string>;
  /** The third-party packages the bundles import at run time (node: built-ins left out), sorted. */
  externalPackages: string[];
  /** The files bundled, relative to repoRoot, sorted. */
  sources: string[];
}

/** The package a bare specifier names: "pino", "@bufbuild/protobuf/wire" → "@bufbuild/protobuf". */
function packageNameOf(specifier: string): string {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]!;
}

/**
 * Bare specifiers other than @subdata/* stay imports. The bundle resolves them from dist/bin/, that is
 * from the root node_modules, so a package a workspace resolves to a nested copy (a version conflict)
 * would silently load another version: that fails the build instead.
 */
function externalThirdParty(repoRoot: string): Plugin {
  const rootModules = join(repoRoot, "node_modules");
  return {
    name: "external-third-party",
    setup(pluginBuild) {
      pluginBuild.onResolve({ filter: /^[^./]/ }, (args) => {
        if (args.kind === "entry-point" || args.path.startsWith("@subdata/")) return undefined;
        if (args.path.startsWith("node:")) return { path: args.path, external: true };
        const name = packageNameOf(args.path);
        for (let dir = args.resolveDir; dir.startsWith(repoRoot); dir = dirname(dir)) {
          const modules = join(dir, "node_modules");
          if (!existsSync(join(modules, name))) continue;
          if (modules !== rootModules)
            return { errors: [{ text: `${name} resolves to ${relative(repoRoot, modules)}, not the root node_modules the bundle loads it from` }] };
          break;
        }
        return { path: args.path, external: true };
      });
    },
  };
}

/** Bundles every entry into <outDir>/bin/<name>.mjs with a linked source map, and copies the migrations. */
export async function buildBundles(options: BuildOptions): Promise<BuildResult> {
  const repoRoot = resolve(options.repoRoot);
  const outDir = resolve(options.outDir ?? join(repoRoot, DIST_DIR));
  const entries: Record<string, string> = { ...BUNDLE_ENTRIES, ...options.extraEntries };
  const result = await build({
    entryPoints: Object.fromEntries(Object.entries(entries).map(([name, source]) => [name, join(repoRoot, source)])),
    outdir: join(outDir, "bin"),
    outExtension: { ".js": ".mjs" },
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    // Linked maps map stack traces and CPU profiles back to the .ts sources; without the sources'
    // text, the image needs no sources and the maps stay small.
    sourcemap: "linked",
    sourcesContent: false,
    plugins: [externalThirdParty(repoRoot)],
    metafile: true,
    // Written below, each file renamed into place: a process starting while another build runs
    // (two benches on one tree) reads a whole old or a whole new bundle, never half of one.
    write: false,
    logLevel: "warning",
  });
  mkdirSync(join(outDir, "bin"), { recursive: true });
  const replaceFile = (path: string, contents: string | Uint8Array) => {
    const partial = `${path}.${process.pid}.tmp`;
    writeFileSync(partial, contents);
    renameSync(partial, path);
  };
  for (const file of result.outputFiles) replaceFile(file.path, file.contents);
  replaceFile(bundlePathFor(SOURCE_MAPS_PRELOAD, outDir), SOURCE_MAPS_PRELOAD_TEXT);
  // services/db/src/migrate.ts finds its SQL at new URL("../migrations", import.meta.url): from
  // services/db/src/ that is services/db/migrations, from dist/bin/ (the CLI bundle) dist/migrations.
  const migrations = join(outDir, "migrations");
  rmSync(migrations, { recursive: true, force: true });
  cpSync(join(repoRoot, "services/db/migrations"), migrations, { recursive: true });

  const externalPackages = new Set<string>();
  for (const output of Object.values(result.metafile.outputs)) {
    for (const imported of output.imports) {
      if (imported.external && !imported.path.startsWith("node:")) externalPackages.add(packageNameOf(imported.path));
    }
  }
  // Metafile inputs are relative to the working directory; reported relative to repoRoot.
  const sources = Object.keys(result.metafile.inputs).map((input) => relative(repoRoot, resolve(input)));
  return {
    sources: sources.sort(),
    bundles: Object.fromEntries(Object.keys(entries).map((name) => [name, join(outDir, "bin", `${name}.mjs`)])),
    externalPackages: [...externalPackages].sort(),
  };
}

// `npm run build`: node --import tsx deploy/local/src/bundle.ts
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const started = performance.now();
  const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
  const { bundles, externalPackages } = await buildBundles({ repoRoot });
  const names = Object.keys(bundles).join(", ");
  console.log(`bundled ${names} into ${DIST_DIR}/bin in ${Math.round(performance.now() - started)} ms; external: ${externalPackages.join(", ")}`);
}
