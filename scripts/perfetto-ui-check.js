// Loads a timeline in the Perfetto UI (served by scripts/perfetto-ui-check),
// asks its trace processor what it read, prints one JSON line, and saves a
// screenshot with the first call that ends an arrow selected.
// Usage: node perfetto-ui-check.js PAGE_URL PNG
const { chromium } = require('playwright-core');

const [, , pageUrl, png] = process.argv;

async function main() {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox'],
  });
  const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(pageUrl);
  await page.waitForFunction(() => {
    const engine = window.globals && Object.values(globals.state.engines)[0];
    return engine && engine.ready;
  }, null, { timeout: 120000 });

  let next = 0;
  const query = async (sql) => {
    const id = `q${next++}`;
    await page.evaluate(([id, sql]) => globals.dispatch(Actions.executeQuery({
      engineId: Object.keys(globals.state.engines)[0], queryId: id, query: sql,
    })), [id, sql]);
    const done = await page.waitForFunction((id) => globals.queryResults.get(id), id, { timeout: 60000 });
    const result = await done.jsonValue();
    await page.evaluate((id) => globals.dispatch(Actions.deleteQuery({ queryId: id })), id);
    if (result.error) throw new Error(`${sql}: ${result.error}`);
    return result.rows;
  };

  const report = {
    slices: (await query('select count(*) as n from slice'))[0].n,
    flows: (await query('select count(*) as n from flow'))[0].n,
    processes: (await query('select name from process where name is not null order by pid')).map((r) => r.name),
    flow_ends: await query(`select s1.name as from_slice, coalesce(p2.name, s2.name) as into_slice, count(*) as n
        from flow f join slice s1 on f.slice_out = s1.id join slice s2 on f.slice_in = s2.id
        left join slice p2 on s2.parent_id = p2.id group by 1, 2 order by 3 desc`),
    // The arguments of the first call of each function (by key).
    call_args: await query(`select s.name as func, a.key as key, coalesce(a.string_value, cast(a.int_value as text), cast(a.real_value as text)) as value
        from slice s join args a using (arg_set_id)
        where s.id in (select min(id) from slice group by name) order by s.name, a.key`),
    import_errors: await query("select name, value from stats where severity in ('error', 'data_loss') and value > 0"),
    track_groups: await page.evaluate(() => Object.values(globals.state.trackGroups).map((g) => g.name)),
    page_errors: errors,
  };

  // Zoom on the calls the arrows join.
  const [window_] = await query(`select min(s1.ts) as start, max(s2.ts + s2.dur) as end
      from flow f join slice s1 on f.slice_out = s1.id join slice s2 on f.slice_in = s2.id`);
  if (window_ && window_.start !== null && window_.end > window_.start) {
    await page.evaluate(([start, end]) => {
      const pad = (end - start) * 0.05;
      const span = globals.frontendLocalState.visibleWindowTime.clone();
      span.start = (start - pad) / 1e9;
      span.end = (end + pad) / 1e9;
      globals.frontendLocalState.updateVisibleTime(span);
    }, [window_.start, window_.end]);
  }

  // Select a call where an arrow ends, to show its arguments (and the
  // arrow: the UI draws those of the selected slice), preferring one the
  // arrow ends at rather than inside.
  const [call] = await query(`select coalesce(p.id, s.id) as id, coalesce(p.track_id, s.track_id) as track_id
      from flow f join slice s on f.slice_in = s.id left join slice p on s.parent_id = p.id
      order by s.depth, s.ts limit 1`);
  if (call) {
    await page.evaluate(([id, tpTrack]) => {
      const track = Object.values(globals.state.tracks).find((t) => t.config &&
          (t.config.trackId === tpTrack || (t.config.trackIds || []).includes(tpTrack)));
      if (track) globals.makeSelection(Actions.selectChromeSlice({ id, trackId: track.id, table: 'slice' }));
    }, [call.id, call.track_id]);
  }
  await page.waitForTimeout(2000);
  await page.screenshot({ path: png });
  console.log(JSON.stringify(report));
  await browser.close();
}

main().catch((e) => {
  console.error(`perfetto-ui-check: ${e.message || e}`);
  process.exit(1);
});
