// Package browsertest opens the status page (statuspage, served by
// dsync's library over the embedded test server of internal/mongotest)
// in headless Chromium, driven by github.com/chromedp/chromedp, and
// checks what a person sees. It is a module of its own so that neither
// the library nor the command requires chromedp.
//
// The test skips when no chromium is installed, unless
// DSYNC_BROWSERTEST_REQUIRED=1 (set by .ci/run, which installs Debian's
// chromium when missing): then it fails.
package browsertest
