// Bundles src/widget.ts (and its CSS) into ../agentcell_widgets/static/ for anywidget. Run by the
// Python build (hatch-jupyter-builder) and by `npm run build`; `--watch` rebuilds for ANYWIDGET_HMR=1.
import * as esbuild from "esbuild";
import { readFileSync, writeFileSync } from "node:fs";

const { version } = JSON.parse(readFileSync(new URL("./package.json", import.meta.url), "utf8"));
const options = {
  entryPoints: { turn: "src/widget.ts" },
  outdir: "../agentcell_widgets/static",
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

if (process.argv.includes("--watch")) {
  const context = await esbuild.context(options);
  await context.watch();
} else {
  await esbuild.build(options);
  // The left-out font formats leave empty `url()` sources behind; drop them so nothing asks for the page.
  const css = new URL("../agentcell_widgets/static/turn.css", import.meta.url);
  writeFileSync(css, readFileSync(css, "utf8").replaceAll(/,url\(\) format\("(woff|truetype)"\)/g, ""));
}
