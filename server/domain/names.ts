/** The addressee that means every other active member of the team. */
export const BROADCAST = "*";
