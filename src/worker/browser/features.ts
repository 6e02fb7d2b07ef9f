// The Chromium features a worker's browsers run without. Chromium reads one --disable-features switch, the last one
// given, so a launch that passed only its own would switch Playwright's back on: Playwright's list
// (playwright-core's chromiumSwitches.ts) is repeated here, and test/integration/browserFeatures.test.ts fails when
// Playwright disables one this list does not.

/** What playwright-core 1.65 disables (its reasons are in its source: interception, HTTPS upgrades, start-up traffic). */
const PLAYWRIGHT_DISABLED = [
  'AvoidUnnecessaryBeforeUnloadCheckSync',
  'DestroyProfileOnBrowserClose',
  'HttpsUpgrades',
  'HttpsFirstBalancedModeAutoEnable',
  'LensOverlay',
  'MediaRouter',
  'PaintHolding',
  'ThirdPartyStoragePartitioning',
  'AvoidCorsURLLoaderRestartOnRedirect',
  'TcpPortRandomizationWin',
  'OptimizationHints',
  'NetworkTimeServiceQuerying',
  'AimEnabled',
  'PreconnectToSearch',
  'msForceBrowserSignIn',
  'msEdgeUpdateLaunchServicesPreferredVersion',
];

/**
 * Ours (issue 36):
 * - the address bar's popup as a web page. Headless Chromium builds one per browser context, in a renderer of its
 *   own (chrome://omnibox-popup.top-chrome, 110-160 MB resident) that no page ever shows; a worker keeps a context
 *   per page in flight (pool.ts), so it cost one idle renderer per page in flight.
 * - the spare renderer. Chromium keeps a renderer process started ahead for the browser context that navigated
 *   last, and throws it away when another context navigates. A worker's pages take turns in their own contexts, so
 *   nearly every navigation threw one away and started the next: 972 renderer processes for 552 pages on the bench's
 *   rendered row, 859 of them gone within half a second. Without it: 117, and 191 against 218-224 ms of CPU a page
 *   in one run (bench/results/2026-12-05-browser-spare.md). A kept page renders in its own renderer again, and a new context's
 *   first page waits for a process start, which a spare saved only when it was for that context.
 */
export const LIGHTER_DISABLED = ['WebUIOmniboxPopup', 'WebUIOmniboxAimPopup', 'SpareRendererForSitePerProcess'];

/**
 * The launch's one --disable-features switch: Playwright's, ours, and those of any --disable-features among `extra`
 * (CRAWL_STUDIO_BROWSER_ARGS), merged; the other extra flags as they are.
 */
export function withDisabledFeatures(extra: readonly string[]): string[] {
  const features = [...PLAYWRIGHT_DISABLED, ...LIGHTER_DISABLED];
  const rest: string[] = [];
  for (const arg of extra) {
    const m = /^--disable-features=(.*)$/.exec(arg);
    if (m) features.push(...m[1]!.split(',').filter(Boolean));
    else rest.push(arg);
  }
  return [`--disable-features=${[...new Set(features)].join(',')}`, ...rest];
}
