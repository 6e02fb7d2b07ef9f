// The dashboard's two uPlot charts over the run's metric history: throughput (pages/s, items/s) and queue depth
// (jobs waiting, active or delayed, and URLs discovered per second).

import uPlot from 'uplot';
import type { DashboardData } from '../../src/extension/dashboard/protocol';
import { h } from '../shared/dom';
import { fmtInt } from '../shared/format';

interface ChartBox {
  box: HTMLElement;
  plot: HTMLElement;
}
interface Plots {
  a: uPlot;
  b: uPlot;
}

/** The charts' section, and what draws a snapshot into it (the plots are made at the first, once it is laid out). */
export function createCharts(): { el: HTMLElement; render: (d: DashboardData) => void } {
  const throughput = chartBox('Throughput', 'pages/s and items/s over time');
  const depth = chartBox('Queue depth', 'jobs waiting, active or delayed, and new URLs discovered per second');
  const el = h('div', { class: 'charts' }, throughput.box, depth.box);
  let plots: Plots | null = null;
  const render = (d: DashboardData) => {
    plots ??= makePlots(throughput, depth, el);
    renderCharts(d, plots, [throughput.plot, depth.plot]);
  };
  return { el, render };
}

function chartBox(title: string, label: string): ChartBox {
  const plot = h('div', { class: 'plot', role: 'img', 'aria-label': label });
  return { box: h('div', { class: 'chart' }, h('h2', {}, title), plot), plot };
}

function cssVar(name: string, fallback: string): string {
  return getComputedStyle(document.body).getPropertyValue(name).trim() || fallback;
}

function axes(yLabel: string): uPlot.Axis[] {
  const fg = cssVar('--vscode-descriptionForeground', '#888');
  const grid = cssVar('--vscode-editorGroup-border', 'rgba(128,128,128,.2)');
  const font = `11px ${cssVar('--vscode-font-family', 'sans-serif')}`;
  // Axis labels overlapped (issue 32, item 7): time ticks were allowed 50 px apart, narrower than "10:00:00", and
  // the y axis was 50 px wide whatever its values ("12,345" ran into its label). Ticks now keep room for their text
  // and the y axis is as wide as its widest value plus its label.
  const measure = document.createElement('canvas').getContext('2d');
  if (measure) measure.font = font;
  const width = (text: string) => (measure ? measure.measureText(text).width : text.length * 7);
  return [
    { stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 }, font, space: 90 },
    {
      stroke: fg,
      grid: { stroke: grid, width: 1 },
      ticks: { stroke: grid, width: 1 },
      font,
      label: yLabel,
      labelFont: font,
      labelSize: 18,
      space: 30,
      size: (_u, values) => Math.ceil(Math.max(24, ...(values ?? []).map((v) => width(String(v))))) + 10 + 18,
    },
  ];
}

function makePlots(throughput: ChartBox, depth: ChartBox, chartsEl: HTMLElement): Plots {
  const blue = cssVar('--vscode-charts-blue', '#3794ff');
  const green = cssVar('--vscode-charts-green', '#89d185');
  const orange = cssVar('--vscode-charts-orange', '#d18616');
  const purple = cssVar('--vscode-charts-purple', '#b180d7');
  const size = (el: HTMLElement) => ({ width: Math.max(200, el.clientWidth), height: 200 });
  const fmt = (v: number | null) => (v === null ? '–' : v >= 100 ? fmtInt(v) : v.toFixed(1));
  const a = new uPlot(
    {
      ...size(throughput.plot),
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] } },
      axes: axes('per second'),
      series: [
        {},
        { label: 'pages/s', stroke: blue, width: 2, fill: blue + '22', value: (_u, v) => fmt(v) },
        { label: 'items/s', stroke: green, width: 2, value: (_u, v) => fmt(v) },
      ],
    },
    [[], [], []],
    throughput.plot,
  );
  const b = new uPlot(
    {
      ...size(depth.plot),
      cursor: { drag: { x: false, y: false } },
      scales: {
        x: { time: true },
        y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] },
        r: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] },
      },
      axes: [
        ...axes('jobs'),
        {
          side: 1,
          scale: 'r',
          stroke: cssVar('--vscode-descriptionForeground', '#888'),
          grid: { show: false },
          size: 50,
          font: `11px ${cssVar('--vscode-font-family', 'sans-serif')}`,
        },
      ],
      series: [
        {},
        { label: 'queue depth', stroke: orange, width: 2, fill: orange + '33', value: (_u, v) => fmt(v) },
        { label: 'discovered/s', stroke: purple, width: 1.5, scale: 'r', dash: [4, 3], value: (_u, v) => fmt(v) },
      ],
    },
    [[], [], []],
    depth.plot,
  );
  new ResizeObserver(() => {
    a.setSize(size(throughput.plot));
    b.setSize(size(depth.plot));
  }).observe(chartsEl);
  return { a, b };
}

function renderCharts(d: DashboardData, plots: Plots, boxes: readonly HTMLElement[]): void {
  const s = d.series;
  plots.a.setData([[...s.t], [...s.pages], [...s.items]]);
  plots.b.setData([[...s.t], [...s.depth], [...s.discovered]]);
  for (const box of boxes) {
    const none = box.querySelector<HTMLElement>('.none');
    if (s.t.length >= 2) none?.remove();
    else if (!none)
      box.append(
        h('div', { class: 'none' }, d.run ? 'Collecting samples…' : 'This task has not run on this Redis yet.'),
      );
  }
}
