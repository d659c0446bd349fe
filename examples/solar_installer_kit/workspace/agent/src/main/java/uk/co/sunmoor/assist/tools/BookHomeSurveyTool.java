package uk.co.sunmoor.assist.tools;

import java.time.LocalDate;

import org.springframework.ai.tool.annotation.Tool;
import org.springframework.ai.tool.annotation.ToolParam;
import org.springframework.stereotype.Component;

import uk.co.sunmoor.assist.client.SchedulingClient;
import uk.co.sunmoor.assist.client.dto.SurveyBookingRequest;
import uk.co.sunmoor.assist.client.dto.SurveyBookingResponse;

/**
 * Books a free home survey through the scheduling service (POST /api/v2/surveys).
 * Surveys are only offered in the postcode areas listed in "Areas we cover".
 */
@Component
public class BookHomeSurveyTool {

    private final SchedulingClient scheduling;

    public BookHomeSurveyTool(SchedulingClient scheduling) {
        this.scheduling = scheduling;
    }

    @Tool(name = "book_home_survey",
          description = "Book a free home survey for a customer who wants a solar and/or battery quote. "
                  + "Only call this after the customer has agreed a date and a slot.")
    public SurveyBookingResponse bookHomeSurvey(
            @ToolParam(description = "Full UK postcode of the property to be surveyed, e.g. EX4 3PL") String postcode,
            @ToolParam(description = "Date the customer asked for, ISO format yyyy-MM-dd. Must be a weekday.") LocalDate preferredDate,
            @ToolParam(description = "Visit slot: MORNING (8am-12pm) or AFTERNOON (12pm-5pm)") String slot,
            @ToolParam(description = "Customer's mobile number for the surveyor's arrival text", required = false) String mobile) {
        return scheduling.bookSurvey(new SurveyBookingRequest(postcode, preferredDate, slot, mobile));
    }
}
