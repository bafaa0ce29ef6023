package payload

import "github.com/accountablework/accountable"

// The payload types of these events (Types).
func init() {
	describes[EpisodeRecorded](accountable.EventEpisodeRecorded)
}

// EpisodeRecorded is the payload of episode.recorded: the episode as recorded.
type EpisodeRecorded = accountable.Episode
