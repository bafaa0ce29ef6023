package main

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/workflow"

	"github.com/accountablework/accountable/api"
	"github.com/accountablework/accountable/store"
)

// Metrics are the service's Prometheus metrics: the one implementation of the small
// metrics interfaces that api, store and worker declare. GET /metrics serves them.
type Metrics struct {
	registry         *prometheus.Registry
	requests         *prometheus.CounterVec
	requestDuration  *prometheus.HistogramVec
	replays          *prometheus.CounterVec
	appended         prometheus.Counter
	conflicts        *prometheus.CounterVec
	ledgerReads      *prometheus.CounterVec
	longReads        *prometheus.CounterVec
	workflowMessages *prometheus.CounterVec
	workflowFailures *prometheus.CounterVec
	checkpointLag    prometheus.Histogram
	logRefusals      *prometheus.CounterVec
	witnessRefusals  *prometheus.CounterVec
}

// newMetrics registers the service's metrics, the Go runtime's and the process's.
func newMetrics() *Metrics {
	r := prometheus.NewRegistry()
	m := &Metrics{
		registry: r,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "accountable_http_requests_total",
			Help: "HTTP requests by route (the path template), method and status."}, []string{"route", "method", "status"}),
		requestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "accountable_http_request_duration_seconds",
			Help: "HTTP request durations by route and method.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)},
			[]string{"route", "method"}),
		replays: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "accountable_idempotent_replays_total",
			Help: "Requests answered with the stored response of an earlier request with the same Idempotency-Key."}, []string{"operation"}),
		appended: prometheus.NewCounter(prometheus.CounterOpts{Name: "accountable_ledger_events_appended_total",
			Help: "Ledger events appended by committed commands."}),
		conflicts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "accountable_command_conflicts_total",
			Help: "Commands that lost a race (serialization failure, deadlock, unique violation): retried, or exhausted (409 write_conflict)."},
			[]string{"outcome"}),
		ledgerReads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "accountable_ledger_reads_total",
			Help: "Ledger reads (event pages, verifications, projections) with DATABASE_READ_URL set, by where they ran and why not on the replica."},
			[]string{"served_by", "reason"}),
		longReads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "accountable_long_reads_total",
			Help: "Long reads (ledger verifications, projections) by kind and outcome: ran (a read ran; a verification's run once however many requests it answered), shared (a verification answered by a run another request asked for first), refused (429: its turn did not come within DATABASE_LONG_READ_WAIT)."},
			[]string{"kind", "outcome"}),
		workflowMessages: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "accountable_workflow_messages_total",
			Help: "Workflow starts and signals delivered from the outbox, by result."}, []string{"kind", "workflow", "result"}),
		workflowFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "accountable_workflow_failures_total",
			Help: "Workflow executions that ended with an error, by workflow type."}, []string{"workflow"}),
		checkpointLag: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "accountable_ledger_checkpoint_lag_seconds",
			Help:    "From the first notice of a workspace's new events to a signed checkpoint of its log covering them.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 10)}),
		logRefusals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "accountable_ledger_log_refusals_total",
			Help: "ALERT: times the ledger sealer refused to sign a workspace's log, by reason (broken_event, inconsistent, foreign_note, shrunk): its history is not the one signed before."},
			[]string{"reason"}),
		witnessRefusals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "accountable_ledger_witness_refusals_total",
			Help: "ALERT: times a witness refused a workspace's checkpoint, by witness and reason (inconsistent, ahead: it cosigned a larger tree, a rollback; forbidden: it does not know the log)."},
			[]string{"witness", "reason"}),
	}
	r.MustRegister(m.checkpointLag, m.logRefusals, m.witnessRefusals, m.requests, m.requestDuration, m.replays, m.appended, m.conflicts, m.ledgerReads, m.longReads, m.workflowMessages, m.workflowFailures,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// RequestSeries returns the series of the HTTP requests of route and method (api.Metrics):
// their labels looked up once, here, rather than for every request.
func (m *Metrics) RequestSeries(route, method string) api.RequestSeries {
	return &requestSeries{requests: m.requests.MustCurryWith(prometheus.Labels{"route": route, "method": method}),
		duration: m.requestDuration.WithLabelValues(route, method)}
}

// requestSeries counts and times the requests of one route and method.
type requestSeries struct {
	requests *prometheus.CounterVec // by status
	duration prometheus.Observer
	byStatus sync.Map // status (int): its prometheus.Counter
}

// Observe counts a request answered with status and times it (api.RequestSeries).
func (s *requestSeries) Observe(status int, d time.Duration) {
	c, ok := s.byStatus.Load(status)
	if !ok {
		c, _ = s.byStatus.LoadOrStore(status, s.requests.WithLabelValues(strconv.Itoa(status)))
	}
	c.(prometheus.Counter).Inc()
	s.duration.Observe(d.Seconds())
}

// IdempotentReplay counts a replayed response (api.Metrics).
func (m *Metrics) IdempotentReplay(operation string) { m.replays.WithLabelValues(operation).Inc() }

// LedgerCheckpointSigned observes a signed checkpoint's lag (worker.SealerMetrics).
func (m *Metrics) LedgerCheckpointSigned(lag time.Duration) { m.checkpointLag.Observe(lag.Seconds()) }

// LedgerLogRefused counts a refusal to sign (worker.SealerMetrics).
func (m *Metrics) LedgerLogRefused(reason string) { m.logRefusals.WithLabelValues(reason).Inc() }

// LedgerWitnessRefused counts a witness's refusal (worker.WitnessMetrics).
func (m *Metrics) LedgerWitnessRefused(witness, reason string) {
	m.witnessRefusals.WithLabelValues(witness, reason).Inc()
}

// LedgerEventsAppended counts committed ledger events (store.Metrics).
func (m *Metrics) LedgerEventsAppended(n int) { m.appended.Add(float64(n)) }

// LedgerRead counts a ledger read by where it ran (store.Metrics).
func (m *Metrics) LedgerRead(servedBy, reason string) {
	m.ledgerReads.WithLabelValues(servedBy, reason).Inc()
}

// LongRead counts a long read by kind and outcome (store.Metrics).
func (m *Metrics) LongRead(kind, outcome string) { m.longReads.WithLabelValues(kind, outcome).Inc() }

// CommandConflict counts a command that lost a race (store.Metrics).
func (m *Metrics) CommandConflict(outcome string) { m.conflicts.WithLabelValues(outcome).Inc() }

// WorkflowMessage counts a delivery attempt of the outbox relay (worker.RelayMetrics).
func (m *Metrics) WorkflowMessage(kind, workflow string, err error) {
	result := "delivered"
	if err != nil {
		result = "failed"
	}
	m.workflowMessages.WithLabelValues(kind, workflow, result).Inc()
}

// observeDB adds gauges of the database pool and of the outbox.
func (m *Metrics) observeDB(db *store.DB) {
	stat := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	m.registry.MustRegister(
		stat("accountable_db_pool_acquired_connections", "Connections in use.", func() float64 { return float64(db.PoolStat().AcquiredConns()) }),
		stat("accountable_db_pool_idle_connections", "Idle connections.", func() float64 { return float64(db.PoolStat().IdleConns()) }),
		stat("accountable_db_pool_max_connections", "The pool's size.", func() float64 { return float64(db.PoolStat().MaxConns()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "accountable_db_pool_acquires_total", Help: "Connections acquired from the pool."},
			func() float64 { return float64(db.PoolStat().AcquireCount()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "accountable_db_pool_empty_acquires_total",
			Help: "Acquires that had to wait for a connection (the pool was exhausted)."},
			func() float64 { return float64(db.PoolStat().EmptyAcquireCount()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "accountable_db_pool_acquire_wait_seconds_total",
			Help: "Time spent waiting for a connection."}, func() float64 { return db.PoolStat().AcquireDuration().Seconds() }),
		stat("accountable_db_long_read_pool_acquired_connections", "Connections of the long reads' pool (verifications, projections) in use.",
			func() float64 { return float64(db.LongReadPoolStat().AcquiredConns()) }),
		stat("accountable_db_long_read_pool_max_connections", "The long reads' pool's size (DATABASE_LONG_READ_MAX_CONNS).",
			func() float64 { return float64(db.LongReadPoolStat().MaxConns()) }),
		stat("accountable_outbox_pending_messages", "Workflow messages committed but not delivered yet.", func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			n, err := db.PendingWorkflowMessages(ctx)
			if err != nil {
				return -1
			}
			return float64(n)
		}),
		stat("accountable_outbox_dead_messages", "Workflow messages Temporal refused for good, kept for an operator (outbox.dead_at).", func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			n, err := db.DeadWorkflowMessages(ctx)
			if err != nil {
				return -1
			}
			return float64(n)
		}),
	)
	db.Observe(m)
}

// handler serves the metrics in the Prometheus text format.
func (m *Metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
}

// apiHandler serves the metrics on the API's listener, unless METRICS_ADDR has a listener
// of their own (serveMetrics): then the API's port, which may face the public, answers
// /metrics 404 like any path it does not serve.
func (m *Metrics) apiHandler(cfg Config) fiber.Handler {
	if cfg.MetricsAddr != "" {
		return nil
	}
	return adaptor.HTTPHandler(m.handler())
}

// workflowFailureCounter counts workflow executions that end with an error. It sees
// replays too, so it counts only when the workflow is not replaying.
type workflowFailureCounter struct {
	interceptor.WorkerInterceptorBase
	m *Metrics
}

func (w *workflowFailureCounter) InterceptWorkflow(ctx workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &workflowFailureInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, m: w.m}
}

type workflowFailureInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	m *Metrics
}

func (w *workflowFailureInbound) ExecuteWorkflow(ctx workflow.Context, in *interceptor.ExecuteWorkflowInput) (any, error) {
	res, err := w.Next.ExecuteWorkflow(ctx, in)
	if err != nil && !workflow.IsReplaying(ctx) {
		w.m.workflowFailures.WithLabelValues(workflow.GetInfo(ctx).WorkflowType.Name).Inc()
	}
	return res, err
}
