package activities

import (
	"context"

	"github.com/accountablework/accountable"
)

// LaunchStore is what the launch activities need. Every method is one command, idempotent:
// a retry after success changes nothing and answers the same.
type LaunchStore interface {
	LaunchJobIDs(ctx context.Context, workspaceID, launchID string) ([]string, error)
	ReserveJob(ctx context.Context, workspaceID, launchID, jobID string, approved bool) (accountable.JobReservation, error)
	CancelJob(ctx context.Context, workspaceID, launchID, jobID string) error
	DispatchJob(ctx context.Context, workspaceID, launchID, jobID string) (string, error)
	SettleJob(ctx context.Context, workspaceID, launchID, jobID string, status accountable.RunStatus, cost int64) error
	TimeOutRun(ctx context.Context, workspaceID, runID string, sparePaused bool) (accountable.Run, error)
	EndLaunch(ctx context.Context, workspaceID, launchID string) (accountable.LaunchState, error)
}

// Launches holds the launch activities.
type Launches struct {
	Store LaunchStore
}

// LaunchRef names a launch.
type LaunchRef struct {
	WorkspaceID string `json:"workspaceId"`
	LaunchID    string `json:"launchId"`
}

// JobRef names a job of a launch.
type JobRef struct {
	WorkspaceID string `json:"workspaceId"`
	LaunchID    string `json:"launchId"`
	JobID       string `json:"jobId"`
	Approved    bool   `json:"approved"`
}

// Settlement is what a job's run came to.
type Settlement struct {
	Job       JobRef                `json:"job"`
	Status    accountable.RunStatus `json:"status"`
	CostCents int64                 `json:"costCents"`
}

// RunRef names a run.
type RunRef struct {
	WorkspaceID string `json:"workspaceId"`
	RunID       string `json:"runId"`
	// SparePaused leaves a paused run paused when it is timed out (launches since
	// pausedRunsVersion wait for it instead).
	SparePaused bool `json:"sparePaused,omitempty"`
}

// LaunchJobs lists the launch's jobs in order.
func (a *Launches) LaunchJobs(ctx context.Context, in LaunchRef) ([]string, error) {
	ids, err := a.Store.LaunchJobIDs(ctx, in.WorkspaceID, in.LaunchID)
	return ids, retryable(err)
}

// ReserveJob reserves the job's estimate (or blocks it on a budget decision).
func (a *Launches) ReserveJob(ctx context.Context, in JobRef) (accountable.JobReservation, error) {
	r, err := a.Store.ReserveJob(ctx, in.WorkspaceID, in.LaunchID, in.JobID, in.Approved)
	return r, retryable(err)
}

// CancelJob cancels a job whose budget decision was declined.
func (a *Launches) CancelJob(ctx context.Context, in JobRef) error {
	return retryable(a.Store.CancelJob(ctx, in.WorkspaceID, in.LaunchID, in.JobID))
}

// DispatchJob dispatches the job's run and returns its id.
func (a *Launches) DispatchJob(ctx context.Context, in JobRef) (string, error) {
	id, err := a.Store.DispatchJob(ctx, in.WorkspaceID, in.LaunchID, in.JobID)
	return id, retryable(err)
}

// SettleJob settles the job's reservation against its run's cost.
func (a *Launches) SettleJob(ctx context.Context, in Settlement) error {
	return retryable(a.Store.SettleJob(ctx, in.Job.WorkspaceID, in.Job.LaunchID, in.Job.JobID, in.Status, in.CostCents))
}

// TimeOutRun fails a run that was not finalised in time; it returns how it ended.
func (a *Launches) TimeOutRun(ctx context.Context, in RunRef) (accountable.Run, error) {
	r, err := a.Store.TimeOutRun(ctx, in.WorkspaceID, in.RunID, in.SparePaused)
	return r, retryable(err)
}

// EndLaunch ends the launch once its jobs have ended.
func (a *Launches) EndLaunch(ctx context.Context, in LaunchRef) (accountable.LaunchState, error) {
	s, err := a.Store.EndLaunch(ctx, in.WorkspaceID, in.LaunchID)
	return s, retryable(err)
}
