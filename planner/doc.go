// Package planner will hold initiative planning: the prompt, the openai-go call with
// structured output, validation of what the model returns and the deterministic baseline
// planner used without an OPENAI_API_KEY. It arrives with the Initiatives area; until then
// it is empty on purpose, so that the layout of the design is complete and nothing else
// takes its place.
package planner
