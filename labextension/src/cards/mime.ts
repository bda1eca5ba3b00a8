/**
 * The MIME renderer extension for `application/vnd.co.tool-call+json`.
 *
 * Ranked ahead of `text/html` and marked safe, so JupyterLab picks the card for
 * live outputs and for saved (untrusted) notebooks alike.
 */
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { TOOL_CALL_MIME, parseToolCall } from '../api';
import { APPROVE_KEYS, DENY_KEYS, keysLabel } from '../keys';
import { renderToolCard } from './toolcard';

/** Renders one tool call; keeps the person's expand/collapse across updates. */
export class ToolCallRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(options: IRenderMime.IRendererOptions) {
    super();
    this._mimeType = options.mimeType;
    this.addClass('co-ToolCallOutput');
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const call = parseToolCall(model.data[this._mimeType]);
    const card = renderToolCard(call, {
      open: this._open,
      shortcuts: {
        approve: keysLabel(APPROVE_KEYS),
        deny: keysLabel(DENY_KEYS)
      },
      onToggle: open => {
        this._open = open;
      }
    });
    this.node.replaceChildren(card);
    return Promise.resolve();
  }

  private _mimeType: string;
  private _open = false;
}

/** The factory JupyterLab's rendermime registry uses. */
export const rendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [TOOL_CALL_MIME],
  defaultRank: 10,
  createRenderer: options => new ToolCallRenderer(options)
};

const extension: IRenderMime.IExtension = {
  id: 'co-kernel-lab:tool-call',
  description: 'Renders Co tool calls as collapsible cards.',
  rendererFactory,
  rank: 10,
  dataType: 'json'
};

export default extension;
