/** The JupyterLab / Notebook 7 plugins of agentcell (the MIME renderer is `mime.ts`, loaded separately). */

import { pythonCellsPlugin } from "./python_cells";
import { staleTurnsPlugin } from "./stale";

export default [pythonCellsPlugin, staleTurnsPlugin];
