// What a member's role lets it see (the store's words: lead, teammate, observer).

/**
 * The lead and observers see the whole team: every request, the whole journal, the team
 * feed. A teammate sees what it is party to.
 */
export const seesWholeTeam = (role: string): boolean => role === "lead" || role === "observer";
