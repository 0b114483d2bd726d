/*
 * What every lab dashboard is made of, on @grafana/grafana-foundation-sdk: the two datasources
 * (fixed uids, which the provisioning defines), the run and case variables, panels over
 * Prometheus (PromQL) or InfluxDB (InfluxQL), and a grid that lays rows of panels out two by two.
 * Panel ids and refIds are set here, so the generated JSON is the same on every build.
 */
import dashboard from '@grafana/grafana-foundation-sdk/dashboard';
import prometheus from '@grafana/grafana-foundation-sdk/prometheus';
import timeseries from '@grafana/grafana-foundation-sdk/timeseries';
import table from '@grafana/grafana-foundation-sdk/table';
import common from '@grafana/grafana-foundation-sdk/common';

export const PROM = { type: 'prometheus', uid: 'lab-prometheus' };
export const INFLUX = { type: 'influxdb', uid: 'lab-influxdb' };

/** The run (k6's testid tag) and its cases, from whichever store the board reads. */
export const runVariables = (source) => {
  if (source === INFLUX) {
    return [
      new dashboard.QueryVariableBuilder('testid').label('run').datasource(INFLUX).query('SHOW TAG VALUES FROM "http_reqs" WITH KEY = "testid"').refresh(dashboard.VariableRefresh.OnTimeRangeChanged).sort(dashboard.VariableSort.AlphabeticalDesc),
      new dashboard.QueryVariableBuilder('case').datasource(INFLUX).query('SHOW TAG VALUES FROM "http_reqs" WITH KEY = "case" WHERE "testid" =~ /^$testid$/').refresh(dashboard.VariableRefresh.OnTimeRangeChanged).multi(true).includeAll(true).allValue('.*'),
    ];
  }
  return [
    new dashboard.QueryVariableBuilder('testid').label('run').datasource(PROM).query('label_values(k6_http_reqs_total, testid)').refresh(dashboard.VariableRefresh.OnTimeRangeChanged).sort(dashboard.VariableSort.AlphabeticalDesc),
    new dashboard.QueryVariableBuilder('case').datasource(PROM).query('label_values(k6_http_reqs_total{testid=~"$testid"}, case)').refresh(dashboard.VariableRefresh.OnTimeRangeChanged).multi(true).includeAll(true).allValue('.*'),
  ];
};

/** InfluxQL targets: the SDK has no InfluxDB query module, so a raw query object of our own. */
class InfluxQueryBuilder {
  constructor(query, alias) {
    this.target = { query, rawQuery: true, resultFormat: 'time_series', alias, datasource: INFLUX };
  }
  refId(refId) {
    this.target.refId = refId;
    return this;
  }
  build() {
    return this.target;
  }
}

const refIds = 'ABCDEFGHIJ';

/**
 * A panel: {title, unit, source (PROM or INFLUX), queries: [{expr, legend}] for PromQL or
 * [{query, alias}] for InfluxQL, table: true for a table of instant values}.
 */
export function panel({ title, description, unit, source = PROM, queries, table: asTable = false }) {
  const legend = new common.VizLegendOptionsBuilder().showLegend(true).displayMode(common.LegendDisplayMode.List).placement(common.LegendPlacement.Bottom);
  const p = asTable ? new table.PanelBuilder() : new timeseries.PanelBuilder().lineWidth(1).fillOpacity(10).legend(legend);
  p.title(title).datasource(source);
  if (description) p.description(description);
  if (unit) p.unit(unit);
  queries.forEach((q, i) => {
    if (source === INFLUX) {
      p.withTarget(new InfluxQueryBuilder(q.query, q.alias).refId(refIds[i]));
    } else {
      const t = new prometheus.DataqueryBuilder().refId(refIds[i]).expr(q.expr);
      if (q.legend) t.legendFormat(q.legend);
      if (asTable) t.instant().format(prometheus.PromQueryFormat.Table);
      else t.range();
      p.withTarget(t);
    }
  });
  if (asTable) p.withTransformation({ id: 'merge', options: {} });
  return p;
}

/** A dashboard of rows ({title, panels}) laid out two panels to a line. */
export function board({ uid, title, description, tags = [], variables, rows }) {
  const d = new dashboard.DashboardBuilder(title).uid(uid).tags(['lab', ...tags]).description(description)
    .time({ from: 'now-30m', to: 'now' }).refresh('10s').timezone('browser').readonly();
  for (const v of variables) d.withVariable(v);
  let id = 1;
  let y = 0;
  for (const row of rows) {
    d.withRow(new dashboard.RowBuilder(row.title).id(id).gridPos({ x: 0, y, w: 24, h: 1 }));
    id += 1;
    y += 1;
    row.panels.forEach((p, i) => {
      const wide = row.panels.length === 1 || p.wide;
      p.builder.id(id).gridPos({ x: wide ? 0 : (i % 2) * 12, y: y + Math.floor(i / 2) * 8, w: wide ? 24 : 12, h: 8 });
      d.withPanel(p.builder);
      id += 1;
    });
    y += Math.ceil(row.panels.length / 2) * 8;
  }
  return d;
}
