// Charts of the Usage and Optimize pages: uPlot (canvas) sized to its container, redrawn when the container resizes
// (so a phone-sized screen never scrolls sideways). A canvas says nothing to a screen reader: the box is an image
// with the accessible name the caller gives (a one-line summary), and every page that draws a chart also renders its
// values as a table (ChartTable), visually hidden unless the reader asks to see it.
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

/** UTC dates on the time axis: the usage and results periods are UTC days and months. */
export const utc = (ts: number): Date => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC');

/** Seconds since the epoch of a UTC day (YYYY-MM-DD) or month (YYYY-MM). */
export const periodSeconds = (period: string): number => Date.parse(period.length === 7 ? `${period}-01T00:00:00Z` : `${period}T00:00:00Z`) / 1000;

export const bars = uPlot.paths.bars!({ size: [0.7, 48] });

/** One uPlot chart. `options` gets the width to draw at; the height is fixed. */
export function Chart({ label, data, options, height = 240 }: {
  label: string; data: uPlot.AlignedData; options: (width: number) => Omit<uPlot.Options, 'width' | 'height'>; height?: number;
}) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current!;
    const width = () => Math.max(200, Math.floor(el.clientWidth));
    const plot = new uPlot({ ...options(width()), width: width(), height }, data, el);
    const ro = new ResizeObserver(() => plot.setSize({ width: width(), height }));
    ro.observe(el);
    return () => { ro.disconnect(); plot.destroy(); };
  }, [data, height]);
  return <div class="chart" ref={box} role="img" aria-label={label} />;
}

/** The legend drawn beside a chart (uPlot's own is off): a colour swatch and the series' name. */
export function Legend({ items }: { items: { label: string; color: string; dashed?: boolean }[] }) {
  return (
    <ul class="chart-legend" aria-hidden="true">
      {items.map((i) => (
        <li key={i.label}><span class={`swatch${i.dashed ? ' dashed' : ''}`} style={{ borderColor: i.color, background: i.dashed ? 'transparent' : i.color }} />{i.label}</li>
      ))}
    </ul>
  );
}

/** A chart's values as a table: hidden from sight (a screen reader still reads it) until "Show the values" is pressed. */
export function ChartTable({ label, children }: { label: string; children: ComponentChildren }) {
  const [shown, setShown] = useState(false);
  return (
    <div class="chart-table">
      <button type="button" class="secondary small" aria-expanded={shown} aria-label={`${shown ? 'Hide' : 'Show'} the values of ${label}`}
        onClick={() => setShown(!shown)}>{shown ? 'Hide the values' : 'Show the values'}</button>
      {shown
        ? <div class="table-wrap" role="region" aria-label={label} tabIndex={0}><table aria-label={label}>{children}</table></div>
        : <div class="visually-hidden"><table aria-label={label}>{children}</table></div>}
    </div>
  );
}

/** Standard axis colours (the page's text colours: contrast on white). */
export const axis = (o: Partial<uPlot.Axis> = {}): uPlot.Axis => ({ stroke: '#4d5560', grid: { stroke: '#e6e9ed', width: 1 }, ticks: { stroke: '#d0d7de', width: 1 }, ...o });

/** Day ticks on a time axis (uPlot would otherwise tick hours of a short range and label each with its day). */
export const DAY_INCRS = [86_400, 2 * 86_400, 7 * 86_400, 14 * 86_400, 28 * 86_400];
