// Bundles src/widget.ts (and its CSS) into ../agentcell_widgets/static/ for anywidget. Run by the
// Python build (hatch-jupyter-builder) and by `npm run build`; `--watch` rebuilds for ANYWIDGET_HMR=1.
import * as esbuild from "esbuild";
import { readFileSync } from "node:fs";

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
  banner: { js: `/* agentcell-widgets ${version} */` },
  logLevel: "info",
};

if (process.argv.includes("--watch")) {
  const context = await esbuild.context(options);
  await context.watch();
} else {
  await esbuild.build(options);
}
