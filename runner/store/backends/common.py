"""What both backends share: the kinds of commit a run makes (a folder's are in place, a
repository's are Icechunk commits whose metadata ``pcskm`` names the kind) and the tag of the
commit that records a run."""

RUN_TAG = "run-{:04d}"  # the tag of the commit recording the n-th run into a repository
# Commit metadata key ``pcskm``: what a commit holds (``runs``: a run's record).
CREATED, PREPARED, STARTED, FLUSHED, RECORDED = ("created", "prepared", "started", "flushed",
                                                 "recorded")
