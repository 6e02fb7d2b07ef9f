// The preview's static skeleton: toolbar, page pane, result tabs. No dynamic content here: everything shown that
// comes from the page or the task file is set as text by the render modules, into the elements named by id.

export const SKELETON = `
<div class="toolbar">
  <vscode-single-select class="pages" id="pages" aria-label="Page"></vscode-single-select>
  <vscode-textfield class="grow" id="url" placeholder="Any URL: https://…" aria-label="URL"></vscode-textfield>
  <vscode-button id="open" icon="arrow-right">Open</vscode-button>
  <vscode-button id="refetch" secondary icon="refresh" title="Fetch the page again (the preview otherwise uses its cached copy)">Refetch</vscode-button>
  <vscode-button id="cancel" secondary icon="close" hidden>Cancel</vscode-button>
  <label for="rules">Rule</label>
  <vscode-single-select class="rules" id="rules" aria-label="Rule"></vscode-single-select>
  <vscode-checkbox id="browser" label="Browser" title="Render the page in a headless browser first, as a worker does for a rule with 'browser' (its scripts run there, never here)"></vscode-checkbox>
  <vscode-checkbox id="images" label="Images" title="Load images from the page's origin (off: nothing is loaded from the network)"></vscode-checkbox>
  <vscode-button id="fixture" secondary icon="beaker" title="Save the page and what the task extracts from it as a fixture">Save as Fixture</vscode-button>
</div>
<div class="status" id="status"></div>
<div class="banner" id="banner" hidden></div>
<vscode-split-layout split="horizontal" initial-handle-position="55%" reset-on-dbl-click>
  <div slot="start" class="pane">
    <div class="hl-bar" id="hl-bar"></div>
    <div class="frame-wrap">
      <iframe id="page-frame" sandbox="allow-same-origin" title="Rendered page (scripts disabled)"></iframe>
      <div class="frame-msg" id="frame-msg">Pick a page: a start URL, a cached page, or any URL.</div>
      <div class="sitemap" id="sitemap" hidden></div>
    </div>
    <div class="pick-bar" id="pick-bar" hidden></div>
  </div>
  <div slot="end" class="results">
    <!-- vscode-tabs gives its headers ids of its own: they are told apart by data-tab. -->
    <vscode-tabs id="tabs" selected-index="0">
      <vscode-tab-header slot="header" data-tab="items">Items <vscode-badge variant="counter" id="items-count">0</vscode-badge></vscode-tab-header>
      <vscode-tab-panel><div class="tab-body" id="items"></div></vscode-tab-panel>
      <vscode-tab-header slot="header" data-tab="links">Links <vscode-badge variant="counter" id="links-count">0</vscode-badge></vscode-tab-header>
      <vscode-tab-panel><div class="tab-body" id="links"></div></vscode-tab-panel>
      <vscode-tab-header slot="header" data-tab="problems">Problems <vscode-badge variant="counter" id="problems-count">0</vscode-badge></vscode-tab-header>
      <vscode-tab-panel><div class="tab-body" id="problems"></div></vscode-tab-panel>
      <vscode-tab-header slot="header" data-tab="data" title="Structured data the page carries: JSON-LD, microdata, OpenGraph">Data <vscode-badge variant="counter" id="data-count">0</vscode-badge></vscode-tab-header>
      <vscode-tab-panel><div class="tab-body" id="data"></div></vscode-tab-panel>
    </vscode-tabs>
  </div>
</vscode-split-layout>`;

/** A vscode-elements control with a value (text field, single select) or a checked state (checkbox). */
export interface ValueElement extends HTMLElement {
  value: string;
  checked?: boolean;
}
