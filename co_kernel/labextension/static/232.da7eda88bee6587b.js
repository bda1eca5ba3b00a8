"use strict";(self.rspackChunkco_kernel_lab=self.rspackChunkco_kernel_lab||[]).push([[232],{27(o,r,e){var t=e(28),a=e.n(t),n=e(29),i=(e.n(n))()(a());i.push([o.id,`/*
 * Co extension styles. Only JupyterLab theme variables, so the light and dark
 * themes (and high-contrast ones) both read well.
 */

/* Tool-call card */
.co-ToolCard {
  border: var(--jp-border-width) solid var(--jp-border-color2);
  border-left: 3px solid var(--co-card-accent, var(--jp-border-color1));
  border-radius: var(--jp-border-radius);
  background: var(--jp-layout-color1);
  color: var(--jp-content-font-color1);
  font-family: var(--jp-ui-font-family);
  font-size: var(--jp-ui-font-size1);
  margin: 2px 0;
}

.co-ToolCard[data-status='running'] {
  --co-card-accent: var(--jp-brand-color1);
}

.co-ToolCard[data-status='waiting'] {
  --co-card-accent: var(--jp-warn-color1);
}

.co-ToolCard[data-status='ok'] {
  --co-card-accent: var(--jp-success-color1);
}

.co-ToolCard[data-status='error'],
.co-ToolCard[data-status='denied'] {
  --co-card-accent: var(--jp-error-color1);
}

.co-ToolCard[data-status='interrupted'] {
  --co-card-accent: var(--jp-layout-color4);
}

.co-ToolCard-summary {
  display: flex;
  align-items: center;
  gap: 8px;
  padding: 4px 8px;
  cursor: pointer;
  list-style: none;
  user-select: none;
}

.co-ToolCard-summary::-webkit-details-marker {
  display: none;
}

.co-ToolCard-summary::before {
  content: '▸';
  color: var(--jp-ui-font-color2);
  flex: none;
}

.co-ToolCard[open] > .co-ToolCard-summary::before {
  content: '▾';
}

.co-ToolCard-summary:hover {
  background: var(--jp-layout-color2);
}

/* Outlined badges: the text keeps the theme's font colour, the accent marks it. */
.co-ToolCard-status {
  flex: none;
  padding: 0 6px;
  border: 1px solid var(--co-card-accent, var(--jp-border-color1));
  border-radius: 8px;
  font-size: var(--jp-ui-font-size0);
  color: var(--jp-ui-font-color1);
}

.co-ToolCard-status::before {
  content: '●';
  margin-right: 4px;
  color: var(--co-card-accent, var(--jp-border-color1));
}

.co-ToolCard-tool {
  flex: none;
  font-family: var(--jp-code-font-family);
  font-weight: 600;
}

.co-ToolCard-argsLine {
  flex: 1 1 auto;
  min-width: 0;
  overflow: hidden;
  text-overflow: ellipsis;
  white-space: nowrap;
  font-family: var(--jp-code-font-family);
  color: var(--jp-ui-font-color2);
}

.co-ToolCard-decision {
  flex: none;
  padding: 0 6px;
  border: 1px solid var(--jp-success-color1);
  border-radius: 8px;
  font-size: var(--jp-ui-font-size0);
  color: var(--jp-ui-font-color1);
}

/* The decision language (approval.ts): one colour per tone, everywhere. */
.co-ToolCard-decision[data-tone='danger'] {
  border-color: var(--jp-error-color1);
}

.co-ToolCard-decision[data-tone='neutral'] {
  border-color: var(--jp-border-color1);
}

/* Answer buttons outside the card: the colours ipywidgets gives the card's. */
button.jp-mod-styled:is(.co-mod-success, .co-mod-danger, .co-mod-warning) {
  color: var(--jp-ui-inverse-font-color1);
  border: none;
}

button.jp-mod-styled.co-mod-success {
  background-color: var(--jp-success-color1);
}

button.jp-mod-styled.co-mod-danger {
  background-color: var(--jp-error-color1);
}

button.jp-mod-styled.co-mod-warning {
  background-color: var(--jp-warn-color1);
}

.co-ToolCard-duration {
  flex: none;
  color: var(--jp-ui-font-color2);
  font-size: var(--jp-ui-font-size0);
}

.co-ToolCard-body {
  padding: 4px 8px 8px 22px;
  border-top: var(--jp-border-width) solid var(--jp-border-color2);
}

.co-ToolCard-heading {
  margin: 6px 0 2px;
  font-weight: 600;
  color: var(--jp-ui-font-color1);
}

.co-ToolCard-pre,
.co-Diff {
  margin: 0;
  padding: 4px 6px;
  max-height: 24em;
  overflow: auto;
  white-space: pre-wrap;
  word-break: break-word;
  font-family: var(--jp-code-font-family);
  font-size: var(--jp-code-font-size);
  color: var(--jp-content-font-color1);
  background: var(--jp-cell-editor-background);
  border: var(--jp-border-width) solid var(--jp-cell-editor-border-color);
  border-radius: var(--jp-border-radius);
}

.co-ToolCard-hidden {
  color: var(--jp-warn-color0);
  font-weight: 600;
  margin: 2px 0 4px;
}

.co-ToolCard-hint {
  margin: 4px 0;
  color: var(--jp-warn-color0);
}

.co-ToolCard-footer {
  margin-top: 6px;
  color: var(--jp-ui-font-color2);
  font-size: var(--jp-ui-font-size0);
}

/* Diff lines: translucent tints keep the text colour of the theme readable. */
.co-Diff-line {
  display: block;
  padding: 0 4px;
}

.co-Diff-add {
  background: rgb(46 160 67 / 20%);
  box-shadow: inset 3px 0 var(--jp-success-color1);
}

.co-Diff-del {
  background: rgb(248 81 73 / 20%);
  box-shadow: inset 3px 0 var(--jp-error-color1);
}

.co-Diff-hunk {
  color: var(--jp-content-link-color);
}

.co-Diff-meta {
  color: var(--jp-ui-font-color2);
  font-weight: 600;
}

/* Status bar */
.co-StatusBar {
  display: flex;
  align-items: center;
  gap: 6px;
  cursor: pointer;
}

.co-StatusBar-yolo {
  padding: 0 5px;
  border-radius: 3px;
  font-weight: 700;
  color: var(--jp-ui-inverse-font-color1);
  background: var(--jp-error-color1);
}

.co-StatusBar-waiting {
  padding: 0 5px;
  border: 1px solid var(--jp-warn-color1);
  border-radius: 3px;
  color: var(--jp-ui-font-color1);
}

.co-StatusBar-waiting::before {
  content: '✋ ';
}

/* Notebook 7: the same item in the notebook's toolbar */
.co-ToolbarStatus {
  padding: 0 8px;
  font-family: var(--jp-ui-font-family);
  font-size: var(--jp-ui-font-size1);
  color: var(--jp-ui-font-color1);
  white-space: nowrap;
}

/* Activity panel */
.co-Activity {
  box-sizing: border-box;
  min-width: 0;
  padding: 8px 12px;
  overflow: auto;
  color: var(--jp-ui-font-color1);
  background: var(--jp-layout-color1);
  font-family: var(--jp-ui-font-family);
  font-size: var(--jp-ui-font-size1);
}

.co-Activity-title {
  margin: 0 0 8px;
  font-size: var(--jp-ui-font-size3);
  font-weight: 600;
}

/* A narrow panel (Notebook 7's side panel) scrolls a wide table, not the page. */
.co-Activity-sessionsWrap,
.co-Activity-callsWrap {
  max-width: 100%;
  overflow-x: auto;
}

/*
 * In a narrow panel (Notebook 7's side panel is about 311 px) every column
 * stays: the text gets smaller and the table scrolls sideways in its wrapper.
 */
.co-Activity {
  container: co-activity / inline-size;
}

@container co-activity (max-width: 480px) {
  .co-Activity-table {
    font-size: var(--jp-ui-font-size0);
  }

  .co-Activity-table th,
  .co-Activity-table td {
    padding: 3px;
  }
}

.co-Activity h3 {
  margin: 12px 0 4px;
  font-size: var(--jp-ui-font-size2);
}

.co-Activity-toolbar {
  display: flex;
  flex-wrap: wrap;
  align-items: center;
  gap: 10px;
}

.co-Activity-info {
  color: var(--jp-ui-font-color2);
}

.co-Activity-info.co-mod-error {
  color: var(--jp-error-color1);
}

.co-Activity-table {
  border-collapse: collapse;
  /* At least the wrapper's width; wider, the wrapper scrolls it sideways. */
  min-width: 100%;
}

.co-Activity-table th,
.co-Activity-table td {
  padding: 3px 8px;
  text-align: left;
  border-bottom: var(--jp-border-width) solid var(--jp-border-color2);
  white-space: nowrap;
}

/* Long text wraps in its column instead of being cut: nothing is hidden. */
.co-Activity-table
  td:is(.co-Activity-target, .co-Activity-detail, .co-Activity-notebook) {
  min-width: 14em;
  max-width: 28em;
  white-space: normal;
  overflow-wrap: anywhere;
}

.co-Activity-table th {
  color: var(--jp-ui-font-color2);
  font-weight: 600;
  background: var(--jp-layout-color2);
}

.co-Activity-sessions tbody tr {
  cursor: pointer;
}

.co-Activity-sessions tbody tr:hover,
.co-Activity-sessions tr.co-mod-selected {
  background: var(--jp-layout-color2);
}

.co-Activity-sessions tr.co-mod-selected td:first-child {
  box-shadow: inset 3px 0 var(--jp-brand-color1);
}

.co-Activity-mono {
  font-family: var(--jp-code-font-family);
}

.co-Activity-decision[data-tone='success'] {
  color: var(--jp-success-color1);
}

.co-Activity-decision[data-tone='danger'] {
  color: var(--jp-error-color1);
}

.co-Activity-decision[data-tone='neutral'] {
  color: var(--jp-ui-font-color2);
}

.co-Activity-empty {
  color: var(--jp-ui-font-color2);
}

/* The calls waiting for approval, over the status item (pending.ts). */
.co-Pending {
  max-width: 560px;
  max-height: 60vh;
  overflow: auto;
  padding: 6px 10px;
  background: var(--jp-layout-color0);
  border: var(--jp-border-width) solid var(--jp-border-color1);
  box-shadow: var(--jp-elevation-z6);
  font-size: var(--jp-ui-font-size1);
}

.co-Pending-call {
  border-left: 3px solid #f0ad4e;
  padding: 2px 8px;
  margin: 4px 0;
}

.co-Pending-call pre {
  margin: 2px 0;
  white-space: pre-wrap;
}

.co-Pending-buttons {
  display: flex;
  gap: 6px;
}

/* A remote image that waits for the person's click (images.ts): host and whole URL shown. */
.co-remote-image {
  display: inline-block;
  max-width: 100%;
  padding: 4px 8px;
  border: 1px dashed var(--jp-border-color1);
  border-radius: 4px;
  color: var(--jp-content-font-color1);
  text-decoration: none;
  cursor: pointer;
}

.co-remote-image:hover {
  background: var(--jp-layout-color2);
}

.co-remote-image .co-remote-image-url {
  display: block;
  white-space: pre-wrap;
  word-break: break-all;
}

/*
 * The trust question's blocks (an MCP server's whole command line, however long): the
 * card scrolls them, so their end (\`| sh\`) is never cut off or pushed out of reach.
 */
.co-approval-card .co-markdown pre {
  max-height: 12em;
  margin: 2px 0;
  padding: 4px 6px;
  overflow: auto;
  white-space: pre-wrap;
  overflow-wrap: anywhere;
  font-family: var(--jp-code-font-family);
  font-size: var(--jp-code-font-size);
  background: var(--jp-cell-editor-background);
}
`,""]),e.d(r,{},{A:i})},29(o){o.exports=function(o){var r=[];return r.toString=function(){return this.map(function(r){var e="",t=void 0!==r[5];return r[4]&&(e+="@supports (".concat(r[4],") {")),r[2]&&(e+="@media ".concat(r[2]," {")),t&&(e+="@layer".concat(r[5].length>0?" ".concat(r[5]):""," {")),e+=o(r),t&&(e+="}"),r[2]&&(e+="}"),r[4]&&(e+="}"),e}).join("")},r.i=function(o,e,t,a,n){"string"==typeof o&&(o=[[null,o,void 0]]);var i={};if(t)for(var c=0;c<this.length;c++){var l=this[c][0];null!=l&&(i[l]=!0)}for(var s=0;s<o.length;s++){var d=[].concat(o[s]);t&&i[d[0]]||(void 0!==n&&(void 0===d[5]||(d[1]="@layer".concat(d[5].length>0?" ".concat(d[5]):""," {").concat(d[1],"}")),d[5]=n),e&&(d[2]&&(d[1]="@media ".concat(d[2]," {").concat(d[1],"}")),d[2]=e),a&&(d[4]?(d[1]="@supports (".concat(d[4],") {").concat(d[1],"}"),d[4]=a):d[4]="".concat(a)),r.push(d))}},r}},28(o){o.exports=function(o){return o[1]}},21(o){var r=[];function e(o){for(var e=-1,t=0;t<r.length;t++)if(r[t].identifier===o){e=t;break}return e}function t(o,t){for(var a={},n=[],i=0;i<o.length;i++){var c=o[i],l=t.base?c[0]+t.base:c[0],s=a[l]||0,d="".concat(l," ").concat(s);a[l]=s+1;var p=e(d),u={css:c[1],media:c[2],sourceMap:c[3],supports:c[4],layer:c[5]};if(-1!==p)r[p].references++,r[p].updater(u);else{var f=function(o,r){var e=r.domAPI(r);return e.update(o),function(r){r?(r.css!==o.css||r.media!==o.media||r.sourceMap!==o.sourceMap||r.supports!==o.supports||r.layer!==o.layer)&&e.update(o=r):e.remove()}}(u,t);t.byIndex=i,r.splice(i,0,{identifier:d,updater:f,references:1})}n.push(d)}return n}o.exports=function(o,a){var n=t(o=o||[],a=a||{});return function(o){o=o||[];for(var i=0;i<n.length;i++){var c=e(n[i]);r[c].references--}for(var l=t(o,a),s=0;s<n.length;s++){var d=e(n[s]);0===r[d].references&&(r[d].updater(),r.splice(d,1))}n=l}}},23(o){var r={};o.exports=function(o,e){var t=function(o){if(void 0===r[o]){var e=document.querySelector(o);if(window.HTMLIFrameElement&&e instanceof window.HTMLIFrameElement)try{e=e.contentDocument.head}catch(o){e=null}r[o]=e}return r[o]}(o);if(!t)throw Error("Couldn't find a style target. This probably means that the value for the 'insert' parameter is invalid.");t.appendChild(e)}},25(o){o.exports=function(o){var r=document.createElement("style");return o.setAttributes(r,o.attributes),o.insert(r,o.options),r}},24(o,r,e){o.exports=function(o){var r=e.nc;r&&o.setAttribute("nonce",r)}},22(o){o.exports=function(o){if("u"<typeof document)return{update:function(){},remove:function(){}};var r=o.insertStyleElement(o);return{update:function(e){var t,a,n;t="",e.supports&&(t+="@supports (".concat(e.supports,") {")),e.media&&(t+="@media ".concat(e.media," {")),(a=void 0!==e.layer)&&(t+="@layer".concat(e.layer.length>0?" ".concat(e.layer):""," {")),t+=e.css,a&&(t+="}"),e.media&&(t+="}"),e.supports&&(t+="}"),(n=e.sourceMap)&&"u">typeof btoa&&(t+="\n/*# sourceMappingURL=data:application/json;base64,".concat(btoa(unescape(encodeURIComponent(JSON.stringify(n))))," */")),o.styleTagTransform(t,r,o.options)},remove:function(){var o;null===(o=r).parentNode||o.parentNode.removeChild(o)}}}},26(o){o.exports=function(o,r){if(r.styleSheet)r.styleSheet.cssText=o;else{for(;r.firstChild;)r.removeChild(r.firstChild);r.appendChild(document.createTextNode(o))}}},20(o,r,e){var t=e(21),a=e.n(t),n=e(22),i=e.n(n),c=e(23),l=e.n(c),s=e(24),d=e.n(s),p=e(25),u=e.n(p),f=e(26),v=e.n(f),h=e(27),m={};m.styleTagTransform=v(),m.setAttributes=d(),m.insert=l().bind(null,"head"),m.domAPI=i(),m.insertStyleElement=u(),a()(h.A,m),h.A&&h.A.locals&&h.A.locals}}]);