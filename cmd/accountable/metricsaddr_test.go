package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// With METRICS_ADDR the metrics have a listener of their own, and the API's port (which
// may face the public) does not serve them: /metrics there is a 404 like any path it does
// not serve.
func TestMetricsAddrTakesTheMetricsOffTheAPIPort(t *testing.T) {
	metricsAddr := freeAddr(t)
	cfg := startApp(t, serveOptions, func(cfg *Config) {
		cfg.MetricsAddr = metricsAddr
		cfg.TaskQueue = fmt.Sprintf("e2e-metrics-%d", time.Now().UnixNano())
	})
	get := func(url string) (int, string) {
		t.Helper()
		res, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(raw)
	}
	if status, _ := get(cfg.SiteURL + "/healthz"); status != http.StatusOK {
		t.Fatalf("/healthz: %d", status)
	}
	status, body := get(cfg.SiteURL + "/metrics")
	var refusal struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &refusal); status != http.StatusNotFound || err != nil || refusal.Error.Code != "route_not_found" {
		t.Fatalf("/metrics on the API's port: %d %.300s", status, body)
	}
	status, body = get("http://" + metricsAddr + "/metrics")
	if status != http.StatusOK || !strings.Contains(body, `accountable_http_requests_total{method="GET",route="/healthz",status="200"} 1`) {
		t.Fatalf("/metrics on METRICS_ADDR: %d %.300s", status, body)
	}
}
