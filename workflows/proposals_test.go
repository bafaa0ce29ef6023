package workflows_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/activities"
	"github.com/accountablework/accountable/workflows"
)

var proposalRequest = workflows.ProposalGenerationInput{WorkspaceID: "ws", ProposalID: "p-1",
	Actor: accountable.Actor{Type: accountable.ActorHuman, ID: "u"}, Request: accountable.ProposeInitiative{Title: "Plan"}}

// A model that answers badly is retried up to the bound; the good answer is stored once.
func TestProposalGenerationRetriesThePlannerThenStores(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	var a *activities.Proposals
	made := accountable.InitiativeProposal{ProposalID: "p-1", ProposalDigest: "sha256:ab", Status: accountable.ProposalProposed}
	plans := 0
	env.OnActivity(a.PlanProposal, mock.Anything, proposalRequest).Return(
		func(context.Context, workflows.ProposalGenerationInput) (accountable.InitiativeProposal, error) {
			plans++
			if plans < workflows.PlannerAttempts {
				return accountable.InitiativeProposal{}, errors.New("the model's answer is not a valid plan")
			}
			return made, nil
		})
	env.OnActivity(a.StoreProposal, mock.Anything, activities.StoredProposal{Request: proposalRequest, Proposal: made}).Return(made, nil).Once()
	env.ExecuteWorkflow(workflows.ProposalGeneration, proposalRequest)
	var got accountable.InitiativeProposal
	if err := env.GetWorkflowError(); err != nil || env.GetWorkflowResult(&got) != nil || got.ProposalDigest != "sha256:ab" {
		t.Fatalf("err=%v result=%+v", env.GetWorkflowError(), got)
	}
	if plans != workflows.PlannerAttempts {
		t.Fatalf("planned %d times", plans)
	}
	env.AssertExpectations(t)
}

// Past the bound nothing is stored and the request's pending record is released.
func TestProposalGenerationReleasesTheClaimWhenNoPlanIsMade(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	var a *activities.Proposals
	plans := 0
	env.OnActivity(a.PlanProposal, mock.Anything, proposalRequest).Return(
		func(context.Context, workflows.ProposalGenerationInput) (accountable.InitiativeProposal, error) {
			plans++
			return accountable.InitiativeProposal{}, errors.New("refused")
		})
	released := 0
	env.OnActivity(a.ReleaseProposalGeneration, mock.Anything, proposalRequest).Return(
		func(context.Context, workflows.ProposalGenerationInput) error { released++; return nil })
	env.ExecuteWorkflow(workflows.ProposalGeneration, proposalRequest)
	if env.GetWorkflowError() == nil || plans != workflows.PlannerAttempts || released != 1 {
		t.Fatalf("err=%v plans=%d released=%d", env.GetWorkflowError(), plans, released)
	}
}

// Histories recorded from the dev server (a proposal made; the planner failing three times
// and the claim released), before localActivitiesVersion (regular activities) and after
// (local activities), must replay against the current code.
func TestProposalGenerationReplaysRecordedHistories(t *testing.T) {
	for _, file := range []string{"testdata/proposal_generation.history.json", "testdata/proposal_generation_failed.history.json",
		"testdata/proposal_generation_local.history.json", "testdata/proposal_generation_local_failed.history.json"} {
		r := worker.NewWorkflowReplayer()
		r.RegisterWorkflowWithOptions(workflows.ProposalGeneration, workflow.RegisterOptions{Name: workflows.ProposalGenerationName})
		if err := r.ReplayWorkflowHistoryFromJSONFile(nil, file); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
}
