// The third-party licenses of what esbuild bundled. The labextension's webpack step would list them
// (third-party-licenses.json, what JupyterLab's Help › Licenses reads), but esbuild has already inlined the
// libraries by then, so webpack sees only this package. esbuild's metafile names every input file; each file
// under node_modules belongs to a package whose package.json and LICENSE files give the entry.
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const LICENSE_FILE = /^(licen[cs]e|copying|notice)([-._].*)?$/i;

/** The directory of each npm package with a file in the bundle (by the innermost node_modules). */
export function bundledPackageDirs(metafile, here) {
  const dirs = new Set();
  for (const input of Object.keys(metafile.inputs)) {
    const path = input.replaceAll("\\", "/");
    const at = path.lastIndexOf("node_modules/");
    if (at < 0) continue;
    const parts = path.slice(at + "node_modules/".length).split("/");
    const name = parts[0].startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
    dirs.add(join(here, path.slice(0, at), "node_modules", name));
  }
  return [...dirs];
}

function entry(dir) {
  const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  const files = readdirSync(dir).filter((file) => LICENSE_FILE.test(file)).sort();
  const text = files.map((file) => readFileSync(join(dir, file), "utf8").trim()).join("\n\n");
  if (!text) throw new Error(`${manifest.name} is bundled but ships no LICENSE file: add its license text by hand`);
  return { name: manifest.name, versionInfo: manifest.version, licenseId: manifest.license ?? "UNKNOWN", extractedText: text };
}

/** Writes `{ packages: [...] }` (the format of @jupyterlab/builder's license plugin) for the bundles' metafiles. */
export function writeLicenses(path, metafiles, here) {
  const dirs = new Set(metafiles.flatMap((metafile) => bundledPackageDirs(metafile, here)));
  const byName = new Map([...dirs].map(entry).map((e) => [`${e.name}@${e.versionInfo}`, e]));
  const packages = [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
  writeFileSync(path, `${JSON.stringify({ packages }, null, 2)}\n`);
  return packages;
}
