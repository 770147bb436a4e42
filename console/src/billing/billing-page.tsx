import { useEffect, useMemo, useState } from 'preact/hooks';
import type { Session } from '../api';
import { BillingControls, FIELD_NAMES } from './billing-controls';
import { addressOf, queryFromAddress } from './billing-query';
import { metricsCsv } from './csv';
import { download } from './download';
import { bucketTotals, fetchAllGroups, fetchMetricsPage, formatCost, formatUsage, groupLabel, groupValues, roundNano, type MetricsPage, type MetricsQuery } from './metrics';
import { StackedChart } from './stacked-chart';
import { colour } from './stack';

/** The metrics API's pages of one query: the cursors that led to each, so the table can go back. */
function usePagedMetrics(session: Session, query: MetricsQuery) {
  // Cursors are bound to their query: a new query starts again from its first page.
  const [paging, setPaging] = useState<{ query: MetricsQuery; cursors: string[] }>({ query, cursors: [] });
  const cursors = paging.query === query ? paging.cursors : [];
  const setCursors = (next: string[]) => setPaging({ query, cursors: next });
  // Each answer is kept with the query and cursor it answers: the render between a click on Next
  // page and the effect below shows no page, never the previous one under the new page number.
  const [answer, setAnswer] = useState<{ query: MetricsQuery; cursor: string | undefined; page: MetricsPage } | null>(null);
  const [error, setError] = useState('');
  const cursor = cursors[cursors.length - 1];
  const page = answer && answer.query === query && answer.cursor === cursor ? answer.page : null;
  useEffect(() => {
    let current = true;
    setError('');
    fetchMetricsPage(session, query, cursor)
      .then((loaded) => current && setAnswer({ query, cursor, page: loaded }))
      .catch((err: Error) => current && (setAnswer(null), setError(err.message)));
    return () => void (current = false);
  }, [session, query, cursor]);
  return {
    page,
    error,
    pageNumber: cursors.length + 1,
    next: () => page?.meta.hasMore && setCursors([...cursors, page.meta.nextCursor]),
    previous: () => setCursors(cursors.slice(0, -1)),
  };
}

function GroupsTable({ page, query }: { page: MetricsPage; query: MetricsQuery }) {
  const pageCost = roundNano(page.data.reduce((sum, entry) => sum + entry.summary.cost, 0));
  return (
    <table class="groups">
      <caption>Groups of this page, with their cost and usage over the window</caption>
      <thead>
        <tr>
          {query.groupBy.map((f) => (
            <th scope="col">{FIELD_NAMES[f]}</th>
          ))}
          <th scope="col">Usage</th>
          <th scope="col" class="number">
            Cost
          </th>
        </tr>
      </thead>
      <tbody>
        {page.data.map((entry, i) => (
          <tr data-group={groupLabel(entry, query.groupBy)} data-cost={entry.summary.cost}>
            {groupValues(entry, query.groupBy).map((v, column) => (
              <td>
                {column === 0 && <span class="swatch" style={{ background: colour(i) }} aria-hidden="true" />}
                {v}
              </td>
            ))}
            <td>{formatUsage(entry.summary.usage)}</td>
            <td class="number">{formatCost(entry.summary.cost)}</td>
          </tr>
        ))}
      </tbody>
      <tfoot>
        <tr>
          <th scope="row" colSpan={query.groupBy.length}>
            This page
          </th>
          <td />
          <td class="number" data-page-cost={pageCost}>
            {formatCost(pageCost)}
          </td>
        </tr>
        <tr>
          <th scope="row" colSpan={query.groupBy.length}>
            Total, all groups of the window
          </th>
          <td>{formatUsage(page.summary.totalUsage)}</td>
          <td class="number" data-total-cost={page.summary.totalCost}>
            {formatCost(page.summary.totalCost)}
          </td>
        </tr>
      </tfoot>
    </table>
  );
}

/** Billing for finance: cost over time stacked by group, the groups' table, totals, CSV, pages. */
export function BillingPage({ session }: { session: Session }) {
  const [query, setQuery] = useState<MetricsQuery>(() => queryFromAddress(location.search));
  const { page, error, pageNumber, next, previous } = usePagedMetrics(session, query);
  const [exporting, setExporting] = useState('');
  useEffect(() => history.replaceState(null, '', addressOf(query)), [query]);
  const chart = useMemo(() => {
    if (!page) return null;
    return { timestamps: page.data[0]?.timeseries.map((p) => p.timestamp) ?? [], series: page.data.map((e) => ({ label: groupLabel(e, query.groupBy), costs: e.timeseries.map((p) => p.cost) })) };
  }, [page]);
  const exportCsv = async () => {
    setExporting('Exporting…');
    try {
      const entries = await fetchAllGroups(session, query);
      download(`hangar-billing-${query.startTime.slice(0, 10)}-${query.endTime.slice(0, 10)}.csv`, metricsCsv(entries, query.groupBy));
      setExporting(`Exported ${entries.length} groups.`);
    } catch (err) {
      setExporting(`Export failed: ${(err as Error).message}`);
    }
  };
  return (
    <section aria-labelledby="billing-title">
      <h1 id="billing-title">Billing</h1>
      <BillingControls query={query} onChange={setQuery} />
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {!page && !error && <p aria-live="polite">Loading…</p>}
      {page && chart && (
        <>
          <p>
            {page.resolution} buckets from {page.startTime} to {page.endTime}; total <strong>{formatCost(page.summary.totalCost)}</strong>
          </p>
          <div data-bucket-totals={JSON.stringify(bucketTotals(page.data))} data-timestamps={JSON.stringify(chart.timestamps)}>
            <StackedChart timestamps={chart.timestamps} series={chart.series} title={`Cost per ${page.resolution} bucket, stacked by group (page ${pageNumber})`} />
          </div>
          <nav aria-label="Pages of groups" class="pager">
            <button type="button" onClick={previous} disabled={pageNumber === 1}>
              Previous page
            </button>
            <span aria-live="polite">Page {pageNumber}</span>
            <button type="button" onClick={next} disabled={!page.meta.hasMore}>
              Next page
            </button>
            <button type="button" onClick={() => void exportCsv()}>
              Export CSV (all pages)
            </button>
            <span aria-live="polite">{exporting}</span>
          </nav>
          <GroupsTable page={page} query={query} />
        </>
      )}
    </section>
  );
}
