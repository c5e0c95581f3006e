// Builds the front end into the Python package:
// - src/widget.ts (and its CSS) → ../agentcell_widgets/static/ for anywidget (the live turn);
// - src/lab/ → lib/lab/ (esbuild: the fold, the views and their libraries bundled; JupyterLab's own packages
//   left as imports), then @jupyterlab/builder → ../agentcell_widgets/labextension/, the prebuilt
//   JupyterLab / Notebook 7 extension the wheel installs into share/jupyter/labextensions (lab-core/ tells
//   the builder which packages the application shares).
// Run by the Python build (hatch-jupyter-builder) and by `npm run build`; `--watch` rebuilds the widget for ANYWIDGET_HMR=1.
import * as esbuild from "esbuild";
import { spawnSync } from "node:child_process";
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

// The lab bundle takes CSS as text (style.ts injects it), which would leave KaTeX's `url(fonts/…)` pointing
// at the page. Its stylesheet is bundled here with the fonts inlined, as in the widget's turn.css, and handed
// over as that text.
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

const widget = { ...common, entryPoints: { turn: "src/widget.ts" }, outdir: "../agentcell_widgets/static" };
const lab = {
  ...common,
  entryPoints: { mime: "src/lab/mime.ts", plugins: "src/lab/plugins.ts" },
  outdir: "lib/lab",
  // Webpack (the labextension build) resolves these to the running JupyterLab's shared copies.
  external: ["@jupyterlab/*", "@lumino/*", "@codemirror/*"],
  loader: { ...common.loader, ".css": "text" },
  plugins: [katexCssInlined],
  minify: false, // webpack minifies the federated bundle
};

if (process.argv.includes("--watch")) {
  const context = await esbuild.context(widget);
  await context.watch();
} else {
  const widgetBuild = await esbuild.build(widget);
  const css = new URL("../agentcell_widgets/static/turn.css", import.meta.url);
  writeFileSync(css, dropEmptyFontUrls(readFileSync(css, "utf8")));
  const labBuild = await esbuild.build(lab);
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
