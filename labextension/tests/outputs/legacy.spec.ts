import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';
import { describe, expect, it } from 'vitest';

import { isCoOutput, untrustingFactory } from '../../src/outputs/legacy';

/** A renderer that records the trust of what it is given. */
function recordingFactory(seen: boolean[]): IRenderMime.IRendererFactory {
  return {
    safe: true,
    mimeTypes: ['text/markdown'],
    defaultRank: 60,
    createRenderer: () => {
      const widget = new Widget() as Widget & IRenderMime.IRenderer;
      widget.renderModel = model => {
        seen.push(model.trusted);
        return Promise.resolve();
      };
      return widget;
    }
  };
}

function model(metadata: Record<string, unknown>): IRenderMime.IMimeModel {
  return {
    trusted: true,
    data: { 'text/markdown': '<img src=x onerror=alert(1)>' },
    metadata: metadata as IRenderMime.IMimeModel['metadata'],
    setData: () => undefined
  };
}

describe('Markdown an older Co saved', () => {
  it('renders as untrusted when Co wrote it, as before otherwise', async () => {
    const seen: boolean[] = [];
    const factory = untrustingFactory(recordingFactory(seen));
    expect(factory.mimeTypes).toEqual(['text/markdown']);
    expect(factory.defaultRank).toBe(60);
    const renderer = factory.createRenderer({
      mimeType: 'text/markdown'
    } as IRenderMime.IRendererOptions);
    await renderer.renderModel(model({ co: { request: 'r1' } }));
    await renderer.renderModel(model({}));
    await renderer.renderModel(model({ co: 'not a tag' }));
    renderer.dispose();
    expect(seen).toEqual([false, true, true]);
  });

  it('knows Co outputs by their tag', () => {
    expect(isCoOutput(model({ co: {} }))).toBe(true);
    expect(isCoOutput(model({}))).toBe(false);
  });
});
