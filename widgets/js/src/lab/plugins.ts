/** The JupyterLab / Notebook 7 plugins of agentcell (the MIME renderer is `mime.ts`, loaded separately). */

import { approvalKeysPlugin } from "./approval_keys";
import { approvalNoticePlugin } from "./approval_notice";
import { fixErrorPlugin } from "./fix_error";
import { insertCellPlugin } from "./insert_cell";
import { liveViewsPlugin } from "./live_views";
import { notebookIdPlugin } from "./notebook_id";
import { placeholderPlugin } from "./placeholder";
import { proposalsPlugin } from "./proposals";
import { pythonCellsPlugin } from "./python_cells";
import { retryCellPlugin } from "./retry_cell";
import { staleTurnsPlugin } from "./stale";

export default [
  approvalKeysPlugin,
  approvalNoticePlugin,
  fixErrorPlugin,
  insertCellPlugin,
  liveViewsPlugin,
  notebookIdPlugin,
  placeholderPlugin,
  proposalsPlugin,
  pythonCellsPlugin,
  retryCellPlugin,
  staleTurnsPlugin,
];
