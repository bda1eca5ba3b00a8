import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';
import { afterEach, describe, expect, it } from 'vitest';

import { coOutputFactory } from '../../src/outputs/legacy';
import {
  IMAGE_CLASS,
  guardSanitizer,
  PLACEHOLDER_CLASS,
  URL_ATTRIBUTE,
  imageTarget,
  installImageLoader,
  neutraliseImages,
  placeholderFor,
  withoutRemoteImages
} from '../../src/outputs/images';

const URL_ = 'http://198.51.100.7:8080/c?d=sk%2Fsecret%20value';

function fragment(html: string): HTMLElement {
  const div = document.createElement('div');
  div.innerHTML = html;
  return div;
}

let remove: (() => void) | null = null;
afterEach(() => {
  remove?.();
  remove = null;
  document.body.replaceChildren();
});

describe('reading an image URL as the browser does', () => {
  it('knows what leaves the page', () => {
    for (const src of [
      URL_,
      'HTTPS://h/x',
      '//h/x',
      '/\\h/x',
      '/\t/h/x',
      ' \u0001http://h/x',
      'ht\ntp://h/x',
      '/files/x.png'
    ]) {
      expect(imageTarget(src).kind, src).toBe('remote');
    }
    expect(imageTarget('/\\h/x').url).toBe('//h/x');
    for (const src of ['plot.png', './a/b.png', 'data:image/png;base64,AA==']) {
      expect(imageTarget(src).kind, src).toBe('local');
    }
    for (const src of ['javascript:alert(1)', 'file:///etc/passwd', 'a:b']) {
      expect(imageTarget(src).kind, src).toBe('blocked');
    }
  });
});

describe('the HTML of a Co output', () => {
  it('has its remote images as placeholders, whatever the form', () => {
    const html = neutraliseImages(
      `<p>a <img src="${URL_}" alt="status"></p>` +
        `<details><summary>s</summary><img width="0" height="0" src="//h/z"></details>` +
        `<table><tbody><tr><td><IMG SRC="HTTP://h/t"></td></tr></tbody></table>` +
        `<a href="https://e/page"><img src="http://h/in-link"></a>` +
        `<img src="plot.png"><img src="data:image/png;base64,AA==">` +
        `<img class="${IMAGE_CLASS}" src="https://allowed.test/a.png">` +
        `<img src="javascript:alert(1)"><img src="x.png" srcset="http://h/2x.png 2x">`
    );
    const root = fragment(html);
    const srcs = Array.from(root.querySelectorAll('img')).map(i =>
      i.getAttribute('src')
    );
    expect(srcs).toEqual([
      'plot.png',
      'data:image/png;base64,AA==',
      'https://allowed.test/a.png',
      null,
      'x.png'
    ]);
    expect(root.querySelector('[srcset]')).toBeNull();
    const placeholders = Array.from(
      root.querySelectorAll<HTMLElement>(`.${PLACEHOLDER_CLASS}`)
    );
    expect(placeholders.map(p => p.getAttribute(URL_ATTRIBUTE))).toEqual([
      URL_,
      '//h/z',
      'HTTP://h/t',
      'http://h/in-link'
    ]);
    // Inside a link a second <a> would break the first: a span there.
    expect(placeholders.map(p => p.tagName)).toEqual(['A', 'A', 'A', 'SPAN']);
    expect(placeholders[0].getAttribute('href')).toBe(URL_);
    expect(placeholders[0].textContent).toContain(
      'Image from 198.51.100.7:8080 not loaded: status'
    );
    expect(placeholders[0].textContent).toContain(
      'http://198.51.100.7:8080/c?d=sk/secret value'
    );
  });

  it('is no link where the output is trusted: a script cannot follow it', () => {
    const saved = neutraliseImages(`<p><img src="${URL_}" alt="s"></p>`);
    expect(
      fragment(saved).querySelector(`a.${PLACEHOLDER_CLASS}`)
    ).not.toBeNull();
    const root = fragment(neutraliseImages(saved, false));
    expect(root.querySelector('[href]')).toBeNull();
    const button = root.querySelector<HTMLElement>(`.${PLACEHOLDER_CLASS}`)!;
    expect(button.tagName).toBe('SPAN');
    expect(button.getAttribute(URL_ATTRIBUTE)).toBe(URL_);
    expect(button.getAttribute('role')).toBe('button');
    expect(button.tabIndex).toBe(0);
    expect(button.textContent).toContain('Image from 198.51.100.7:8080');
  });

  it('is left as it is without remote images', () => {
    const html = '<p>no <b>images</b></p><img src="plot.png">';
    expect(neutraliseImages(html)).toBe(html);
  });

  it('shows what hides in a URL', () => {
    const shown = placeholderFor(
      document,
      'https://h/a?x=%E2%80%AEgnp.exe%00',
      '',
      false
    );
    expect(shown.textContent).toContain('x=\\u202egnp.exe\\u0000');
  });

  it('reaches the renderer rewritten, for Co outputs only', async () => {
    const seen: string[] = [];
    const base: IRenderMime.IRendererFactory = {
      safe: true,
      mimeTypes: ['text/html'],
      defaultRank: 50,
      createRenderer: () => {
        const widget = new Widget() as Widget & IRenderMime.IRenderer;
        widget.renderModel = model => {
          seen.push(String(model.data['text/html']));
          return Promise.resolve();
        };
        return widget;
      }
    };
    const factory = coOutputFactory(base, withoutRemoteImages);
    const renderer = factory.createRenderer({
      mimeType: 'text/html'
    } as IRenderMime.IRendererOptions);
    const model = (
      metadata: Record<string, unknown>
    ): IRenderMime.IMimeModel => ({
      trusted: true,
      data: { 'text/html': [`<img src="${URL_}">`] as unknown as string },
      metadata: metadata as IRenderMime.IMimeModel['metadata'],
      setData: () => undefined
    });
    await renderer.renderModel(model({ co: { request: 'r1' } }));
    await renderer.renderModel(model({}));
    renderer.dispose();
    expect(seen[0]).not.toContain('<img');
    expect(seen[0]).toContain(PLACEHOLDER_CLASS);
    expect(seen[1]).toBe(`<img src="${URL_}">`);
  });
});

describe('a click on a placeholder', () => {
  function shown(): HTMLElement {
    // As a trusted output shows it (an untrusted one runs no script at all).
    const root = fragment(
      neutraliseImages(`<p><img src="${URL_}" alt="s"></p>`, false)
    );
    document.body.appendChild(root);
    return root.querySelector<HTMLElement>(`.${PLACEHOLDER_CLASS}`)!;
  }

  it('by a script loads nothing and follows no link', () => {
    remove = installImageLoader(window);
    const placeholder = shown();
    let followed = false;
    document.body.addEventListener('click', () => (followed = true));
    placeholder.click();
    placeholder.dispatchEvent(new MouseEvent('click', { bubbles: true }));
    placeholder.dispatchEvent(
      new KeyboardEvent('keydown', { key: 'Enter', bubbles: true })
    );
    expect(document.querySelector('img')).toBeNull();
    expect(placeholder.isConnected).toBe(true);
    expect(followed).toBe(false);
  });

  it("by the person loads the image in the placeholder's place", () => {
    remove = installImageLoader(window, { isPerson: () => true });
    const placeholder = shown();
    const event = new MouseEvent('click', { bubbles: true, cancelable: true });
    placeholder.querySelector('code')!.dispatchEvent(event);
    expect(event.defaultPrevented).toBe(true);
    const img = document.querySelector('img')!;
    expect(img.getAttribute('src')).toBe(URL_);
    expect(img.classList.contains(IMAGE_CLASS)).toBe(true);
    expect(placeholder.isConnected).toBe(false);
  });

  it("by the person's Enter key loads it too", () => {
    remove = installImageLoader(window, { isPerson: () => true });
    const placeholder = shown();
    placeholder.dispatchEvent(
      new KeyboardEvent('keydown', { key: 'Enter', bubbles: true })
    );
    expect(document.querySelector('img')?.getAttribute('src')).toBe(URL_);
  });
});

describe("the sanitiser's output", () => {
  it("has no remote image where it is Co's answer", () => {
    const sanitizer = {
      sanitize: (html: string) => html
    } as unknown as IRenderMime.ISanitizer;
    guardSanitizer(sanitizer);
    const answer = `<div class="co-markdown"><h2>T</h2><img src="${URL_}"></div>`;
    const root = fragment(sanitizer.sanitize(answer));
    expect(root.querySelector('img')).toBeNull();
    expect(root.querySelector('h2')?.textContent).toBe('T');
    expect(root.querySelector(`.${PLACEHOLDER_CLASS}`)).not.toBeNull();
    const other = `<div><img src="${URL_}"></div>`;
    expect(sanitizer.sanitize(other)).toBe(other);
  });
});
