/**
 * Markdown that an older Co saved is rendered as untrusted.
 *
 * An older Co published the model's answers, notices and magic outputs as
 * `text/markdown`. JupyterLab trusts the outputs of a cell the person ran and
 * keeps that trust in the saved notebook, and it renders trusted Markdown
 * without sanitising: a hostile answer saved then runs its script again at
 * every opening. Co sends sanitised HTML and no Markdown at all; for the
 * notebooks it saved before, this wraps the Markdown renderer so that an
 * output carrying Co's metadata tag (`co`, `OUTPUT_TAG` in
 * `co_kernel/frontend/_publisher.py`) is rendered as untrusted, that is
 * through JupyterLab's sanitiser. Markdown cells and every other output render
 * unchanged. The person has nothing to do here; `co-kernel scrub` rewrites
 * such a notebook for other viewers (nbconvert, a notebook host).
 */
import type { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';

/** The metadata key of every Co output. */
export const OUTPUT_TAG = 'co';

/** Whether an output came from Co: its metadata carries Co's tag. */
export function isCoOutput(model: IRenderMime.IMimeModel): boolean {
  const tag = model.metadata?.[OUTPUT_TAG];
  return typeof tag === 'object' && tag !== null;
}

/** The same output, rendered as untrusted. */
export function untrusted(
  model: IRenderMime.IMimeModel
): IRenderMime.IMimeModel {
  return {
    trusted: false,
    data: model.data,
    metadata: model.metadata,
    setData: options => model.setData(options)
  };
}

/** A factory whose renderers pass Co's outputs through `transform` first. */
export function coOutputFactory(
  factory: IRenderMime.IRendererFactory,
  transform: (model: IRenderMime.IMimeModel) => IRenderMime.IMimeModel
): IRenderMime.IRendererFactory {
  return {
    safe: factory.safe,
    mimeTypes: factory.mimeTypes,
    defaultRank: factory.defaultRank,
    createRenderer: options => {
      const renderer = factory.createRenderer(options);
      const render = renderer.renderModel.bind(renderer);
      renderer.renderModel = (model, ...rest) =>
        (
          render as (
            m: IRenderMime.IMimeModel,
            ...r: unknown[]
          ) => Promise<void>
        )(isCoOutput(model) ? transform(model) : model, ...rest);
      return renderer;
    }
  };
}

/** A factory whose renderers render Co's outputs as untrusted. */
export function untrustingFactory(
  factory: IRenderMime.IRendererFactory
): IRenderMime.IRendererFactory {
  return coOutputFactory(factory, untrusted);
}

/** Wrap the registry's Markdown renderer (before any notebook clones it). */
export function untrustSavedMarkdown(registry: IRenderMimeRegistry): void {
  const mime = 'text/markdown';
  const factory = registry.getFactory(mime);
  if (factory) {
    registry.addFactory(untrustingFactory(factory), registry.getRank(mime));
  }
}
