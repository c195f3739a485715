import { describe, expect, it } from "vitest";
import { html } from "./html.ts";

describe("html", () => {
  it("escapes interpolated text, attributes included", () => {
    const name = `"><script>alert('x')</script>&`;
    expect(html`<p title="${name}">${name}</p>`.value).toBe(
      '<p title="&quot;&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;">&quot;&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;</p>',
    );
  });

  it("keeps nested html and renders lists, dropping null, undefined and false", () => {
    const items = ["a<b", "c"].map((item) => html`<li>${item}</li>`);
    expect(html`<ul>${items}${null}${undefined}${false}</ul>`.value).toBe("<ul><li>a&lt;b</li><li>c</li></ul>");
  });
});
