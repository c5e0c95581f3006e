/** The JupyterLab / Notebook 7 plugins of agentcell (the MIME renderer is `mime.ts`, loaded separately). */

import { notebookIdPlugin } from "./notebook_id";
import { placeholderPlugin } from "./placeholder";
import { pythonCellsPlugin } from "./python_cells";
import { staleTurnsPlugin } from "./stale";

export default [notebookIdPlugin, placeholderPlugin, pythonCellsPlugin, staleTurnsPlugin];
