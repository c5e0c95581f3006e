// Builds the front end into the Python package:
// - ../agentcell_widgets/static/ for anywidget (the live turn): loader.js, the small `_esm` every turn's widget
//   carries, and the parts it loads once per page (src/code_parts.ts): turn.js (src/turn_part.ts, the fold and
//   views) and math.js (KaTeX and its fonts), each with its CSS inside, which the kernel sends when asked;
// - src/lab/ → lib/lab/ (esbuild: the fold, the views and their libraries bundled; JupyterLab's own packages
//   left as imports), then @jupyterlab/builder → ../agentcell_widgets/labextension/, the prebuilt
//   JupyterLab / Notebook 7 extension the wheel installs into share/jupyter/labextensions (lab-core/ tells
//   the builder which packages the application shares).
// Run by the Python build (hatch-jupyter-builder) and by `npm run build`; `--watch` rebuilds the widget's parts
// (a new kernel and page pick them up: the kernel reads each part once).
import * as esbuild from "esbuild";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { writeLicenses } from "./licenses.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));
const { version } = JSON.parse(readFileSync(join(here, "package.json"), "utf8"));
const common = {
  absWorkingDir: here,
  metafile: true,
  bundle: true,
  format: "esm",
  target: "es2022",
  minify: true,
  sourcemap: false,
  legalComments: "none",
  // KaTeX's fonts travel inside the CSS (nothing is fetched from elsewhere at run time). Every browser the
  // notebook runs in takes woff2, the first format KaTeX's @font-face lists, so the older formats are left out.
  loader: { ".woff2": "dataurl", ".woff": "empty", ".ttf": "empty" },
  banner: { js: `/* agentcell-widgets ${version} */` },
  logLevel: "info",
};
// The left-out font formats leave empty `url()` sources behind; drop them so nothing asks for the page.
const dropEmptyFontUrls = (css) => css.replaceAll(/,url\(\) format\("(woff|truetype)"\)/g, "");

// Both bundles take CSS as text (injected by the module that imports it), which would leave KaTeX's
// `url(fonts/…)` pointing at the page. Its stylesheet is bundled here with the fonts inlined and handed over
// as that text.
const katexCssInlined = {
  name: "katex-css-inlined",
  setup(build) {
    build.onLoad({ filter: /[\\/]katex[\\/]dist[\\/]katex(\.min)?\.css$/ }, async (args) => {
      const result = await esbuild.build({
        entryPoints: [args.path],
        bundle: true,
        write: false,
        minify: true,
        logLevel: "silent",
        outdir: "katex",
        loader: common.loader,
      });
      return { contents: dropEmptyFontUrls(result.outputFiles[0].text), loader: "text" };
    });
  },
};

const staticDir = "../agentcell_widgets/static";
// Each part is one module that injects its own styles (CSS as text, KaTeX's with its fonts inlined).
const widget = {
  ...common,
  entryPoints: { turn: "src/turn_part.ts", math: "src/math_part.ts" },
  outdir: staticDir,
  loader: { ...common.loader, ".css": "text" },
  plugins: [katexCssInlined],
};
// The build id the loader and the lab extension key the parts by (src/code_parts.ts).
const buildId = () => {
  const digest = createHash("sha256");
  for (const name of ["turn.js", "math.js"]) digest.update(readFileSync(join(here, staticDir, name)));
  return JSON.stringify(digest.digest("hex").slice(0, 16));
};
const loader = (id) => ({ ...common, entryPoints: { loader: "src/loader.ts" }, outdir: staticDir, define: { __AGENTCELL_BUILD__: id } });
const lab = (id) => ({
  ...common,
  entryPoints: { mime: "src/lab/mime.ts", plugins: "src/lab/plugins.ts" },
  outdir: "lib/lab",
  define: { __AGENTCELL_BUILD__: id },
  // KaTeX goes into a chunk of its own (src/math_part.ts), which webpack loads the first time a turn has math.
  splitting: true,
  // Webpack (the labextension build) resolves these to the running JupyterLab's shared copies.
  external: ["@jupyterlab/*", "@lumino/*", "@codemirror/*"],
  loader: { ...common.loader, ".css": "text" },
  plugins: [katexCssInlined],
  minify: false, // webpack minifies the federated bundle
});

if (process.argv.includes("--watch")) {
  const context = await esbuild.context(widget);
  await context.watch();
} else {
  const widgetBuild = await esbuild.build(widget);
  const id = buildId();
  await esbuild.build(loader(id));
  const labBuild = await esbuild.build(lab(id));
  // Kept for tests/widgets/test_licenses.py, which checks each bundled package has its license listed.
  writeFileSync(join(here, "lib", "metafile.json"), JSON.stringify([widgetBuild.metafile, labBuild.metafile]));
  // The federated bundle JupyterLab loads (remoteEntry.*.js), made by JupyterLab's own builder.
  const builder = join(here, "node_modules", "@jupyterlab", "builder", "lib", "build-labextension.js");
  const run = spawnSync(process.execPath, [builder, "--core-path", join(here, "lab-core"), here], { stdio: "inherit" });
  if (run.status !== 0) throw new Error(`the labextension build failed (exit ${run.status})`);
  // `jupyter labextension list` names the Python package that installed it.
  copyFileSync(join(here, "install.json"), join(here, "..", "agentcell_widgets", "labextension", "install.json"));
  // Over the builder's own (empty) list: the libraries esbuild inlined, for both bundles the wheel ships.
  const metafiles = [widgetBuild.metafile, labBuild.metafile];
  writeLicenses(join(here, "..", "agentcell_widgets", "labextension", "static", "third-party-licenses.json"), metafiles, here);
  writeLicenses(join(here, "..", "agentcell_widgets", "static", "third-party-licenses.json"), [widgetBuild.metafile], here);
}
