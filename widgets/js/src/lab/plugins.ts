/** The JupyterLab / Notebook 7 plugins of agentcell (the MIME renderer is `mime.ts`, loaded separately). */

import { pythonCellsPlugin } from "./python_cells";

export default [pythonCellsPlugin];
